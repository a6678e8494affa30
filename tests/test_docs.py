"""The README stays a first screen and the docs stay found: the README is at most ~150
lines and links what moved out of it, the docs index lists every page, every local link
resolves, and the bundled examples are never shown with `--repos` (a folder of clones:
given examples/repo it finds none, and no run is scored). The README's commands are run
word for word by tests/web/test_readme.py."""

from __future__ import annotations

import re

from fixture_paths import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def pages() -> list:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_the_readme_is_a_first_screen_that_links_the_docs():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    for heading in ("## Quick start", "## Bring your own runs", "## Commands", "## Documentation"):
        assert heading in text, heading
    assert "https://arxiv.org/abs/2602.05892" in text   # ContextBench
    assert "verified_test.parquet" in text and "docs/README.md" in text


def test_the_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text()
    linked = set(LINK.findall(index))
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert page.name in linked, page.name


def test_every_local_link_resolves():
    for page in pages():
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue   # another site
            assert (page.parent / target).exists(), (page.name, target)


def test_the_bundled_examples_are_never_given_with_repos():
    for page in pages():
        assert "--repos examples/repo" not in page.read_text(), page.name
