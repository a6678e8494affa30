"""``--grammars contextbench|official`` (docs/metrics.md §3): the public evaluator parses
with the grammars bundled in tree-sitter-languages 1.10.2, whose binaries streameval loads
into today's tree-sitter runtime. Where the bundle is installed it is the default."""

from __future__ import annotations

import sys

import pytest
from fixture_paths import EXAMPLES, FIXTURES

from streameval.sources import symbols
from streameval.sources.symbols import (
    SymbolIndex,
    check_grammars,
    default_grammars,
    parse_definitions,
)

JQ = (FIXTURES / "symbols" / "jq__jv_print__jv_dump_term.c").read_bytes()

bundle = pytest.mark.skipif(
    symbols._bundle_path() is None and sys.version_info >= (3, 13),
    reason="tree-sitter-languages 1.10.2 has no wheel for Python >= 3.13")


def _defs(grammars: str) -> list[tuple[str, str, int]]:
    found = parse_definitions("src/jv_print.c", JQ, grammars=grammars).definitions
    return [(d.kind, d.name, JQ[:d.start_byte].count(b"\n") + 1) for d in found]


def test_official_grammar_sees_one_function_across_the_ifdef():
    assert ("function_definition", "jv_dump_term", 1) in _defs("official")


@bundle
def test_contextbench_grammar_parses_as_the_evaluator():
    """The evaluator's extractor, run on this file under ../shared/oracle, gives one
    definition: ``dtoa_context`` (a struct specifier in the signature, line 1)."""
    assert _defs("contextbench") == [("struct_specifier", "dtoa_context", 1)]


@bundle
def test_the_bundle_is_the_default_and_every_record_names_it(tmp_path):
    assert default_grammars() == "contextbench"
    assert check_grammars(None) == "contextbench"
    from streameval.commands.main import main

    out = tmp_path / "r.jsonl"
    ex = EXAMPLES
    for choice, expect in ((None, "contextbench"), ("official", "official")):
        extra = ["--grammars", choice] if choice else []
        assert main(["replay", str(ex / "predictions.jsonl"), "--gold", str(ex / "gold.jsonl"),
                     "--repo", str(ex / "repo"), "--out", str(out), "--quiet", *extra]) == 0
        import orjson

        records = [orjson.loads(x) for x in out.read_bytes().splitlines()]
        assert {r.get("grammars") for r in records if "error" not in r} == {expect}


def test_a_language_the_bundle_lacks_is_parsed_with_the_official_grammar():
    swift = b"func greet() -> String { return \"hi\" }\n"
    assert [d.name for d in parse_definitions("a.swift", swift, grammars="contextbench")
            .definitions] == ["greet"]


def test_asking_for_missing_contextbench_grammars_says_how_to_install(monkeypatch):
    monkeypatch.setattr(symbols, "_bundle_path", lambda: None)
    assert default_grammars() == "official"
    with pytest.raises(ValueError, match=r"pip install 'streameval\[contextbench\]'"):
        check_grammars("contextbench")
    with pytest.raises(ValueError, match="unknown grammar set"):
        SymbolIndex(grammars="newest")


def test_extensions_are_matched_in_any_case_as_the_evaluator_does():
    assert symbols.language_for("src/Main.JAVA") == "java"
    assert symbols.language_for("include/X.H") == "c"
    assert symbols.language_for(".py") is None
