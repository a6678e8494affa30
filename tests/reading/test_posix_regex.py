"""The one POSIX regex translation against GNU grep and GNU sed themselves.

Truth by an independent reference: for random patterns over a small alphabet, the lines
Python's translation matches must be the lines GNU grep prints (and sed ``-n /re/p``
prints). Patterns the translation refuses, or the real tool rejects, prove nothing and are
skipped; everything else must agree line for line.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from streameval.reading.posix_regex import Unsupported, replacement_template, to_python

LINES = ["", "a", "b", "ab", "aab", "ba", "a.b", "a*b", "x1", "12", "(a)", "a+b", "a b",
         "a\tb", "{1}", "a|b", "abab", "word a", "[a]", "?", "A", "_a_", "end$", "^a"]

BRE_TOKENS = ["a", "b", ".", "*", r"\(", r"\)", "[ab]", "[^a]", "[[:digit:]]",
              "[[:space:]]", "[]a]", "^", "$", r"\+", r"\?", r"\{1,2\}", r"\<", r"\>",
              r"\|", "(", ")", "+", "?", "|", "{", "}", r"\.", r"\*", "1", " "]
ERE_TOKENS = ["a", "b", ".", "*", "(", ")", "[ab]", "[^a]", "[[:alpha:]]", "[[:punct:]]",
              "^", "$", "+", "?", "{1,2}", "|", r"\<", r"\>", r"\.", r"\(", r"\+", "1",
              r"\w", r"\s"]

needs_gnu = pytest.mark.skipif(not (shutil.which("grep") and shutil.which("sed")),
                               reason="GNU grep and sed are the reference")


def _python_hits(pattern: str, extended: bool, sed: bool) -> list[str] | None:
    try:
        rx = re.compile(to_python(pattern, extended, sed=sed))
    except (Unsupported, re.error):
        return None
    return [line for line in LINES if rx.search(line)]


def _tool_hits(argv: list[str]) -> list[str] | None:
    done = subprocess.run(argv, input="\n".join(LINES) + "\n", capture_output=True,
                          text=True, env={"LC_ALL": "C"})
    if done.returncode > 1 or done.stderr:
        return None                      # the tool rejected or warned about the pattern
    return done.stdout.split("\n")[:-1]


@needs_gnu
@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.sampled_from(BRE_TOKENS), min_size=1, max_size=5),
       extended=st.booleans())
def test_grep_prints_the_lines_the_translation_matches(tokens, extended):
    pool = ERE_TOKENS if extended else BRE_TOKENS
    pattern = "".join(t for t in tokens if t in pool) or "a"
    ours = _python_hits(pattern, extended, sed=False)
    theirs = _tool_hits(["grep", "-E" if extended else "-G", "-e", pattern])
    assume(ours is not None and theirs is not None)
    assert ours == theirs, pattern


@needs_gnu
@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.sampled_from(BRE_TOKENS), min_size=1, max_size=5))
def test_sed_addresses_choose_the_lines_the_translation_matches(tokens):
    pattern = "".join(tokens).replace("/", r"\/")
    ours = _python_hits(pattern, False, sed=True)
    theirs = _tool_hits(["sed", "-n", f"/{pattern}/p"])
    assume(ours is not None and theirs is not None)
    assert ours == theirs, pattern


def test_grep_refuses_back_references_sed_keeps_them():
    with pytest.raises(Unsupported):
        to_python(r"\(a\)\1", False)
    assert re.search(to_python(r"\(a\)\1", False, sed=True), "xaa")


def test_sed_escapes_and_replacements():
    assert re.search(to_python(r"a\tb", False, sed=True), "a\tb")
    assert re.sub("(b)", replacement_template(r"[&\1]\n"), "abc") == "a[bb]\nc"


def test_unknown_class_and_open_bracket_are_unsupported():
    for bad in ("[[:nope:]]", "[ab"):
        with pytest.raises(Unsupported):
            to_python(bad, False)
