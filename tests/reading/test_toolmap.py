"""Tool maps: loading (every mistake named), and what each ``shows`` kind reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from streameval.model import ToolCall
from streameval.reading.infer import infer
from streameval.reading.toolmap import ToolMapError, load_tool_map, mapped_reads

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool-map.toml"


def call(tool: str, inp: dict, output: str | None, **kw) -> ToolCall:
    return ToolCall("c1", tool, inp, output, **kw)


def test_the_example_map_loads_and_matches_by_pattern():
    tools = load_tool_map(EXAMPLE)
    assert tools.match("mcp__serena__read_file").zero_based
    assert tools.match("MCP__Files__READ_TEXT_FILE").count == "head"
    assert tools.match("mcp__other__unknown") is None


@pytest.mark.parametrize(("text", "message"), [
    ("[[tool]]\nshows = 'file'\npath = 'p'\n", "'match'"),
    ("[[tool]]\nmatch = 'x'\nshows = 'everything'\n", "'shows' must be one of"),
    ("[[tool]]\nmatch = 'x'\nshows = 'file'\n", "needs 'path'"),
    ("[[tool]]\nmatch = 'x'\nshows = 'names'\ncolour = 'red'\n", "unknown keys ['colour']"),
    ("[[tool]]\nmatch = 'x'\nshows = 'file'\npath = 3\n", "'path' must name an input field"),
    ("tool = 'x'\n", "expected [[tool]] tables"),
    ("[[tool]\n", "not valid TOML"),
])
def test_mistakes_are_named(tmp_path, text: str, message: str):
    p = tmp_path / "map.toml"
    p.write_text(text)
    with pytest.raises(ToolMapError, match=__import__("re").escape(message)) as exc:
        load_tool_map(p)
    assert str(p) in str(exc.value)


def test_each_kind_of_output(tmp_path):
    p = tmp_path / "map.toml"
    p.write_text("[[tool]]\nmatch = 'mcp__a__view'\nshows = 'lines'\npath = 'file'\n"
                 "[[tool]]\nmatch = 'mcp__a__find'\nshows = 'matches'\n"
                 "[[tool]]\nmatch = 'mcp__a__ls'\nshows = 'names'\n"
                 "[[tool]]\nmatch = 'mcp__a__cat'\nshows = 'file'\npath = 'p'\nstart = 's'\n"
                 "count = 'n'\nzero_based = true\n")
    tools = load_tool_map(p)
    (r,) = mapped_reads(call("mcp__a__view", {"file": "x.py"}, "  4\tdef f():\n  5\t    pass\n"),
                        tools.match("mcp__a__view"))
    assert (r.path, r.start, r.end, r.shown.numbers) == ("x.py", 4, 5, (4, 5))
    (r,) = mapped_reads(call("mcp__a__view", {"file": "x.py"}, "12|a\n13|b"),
                        tools.match("mcp__a__view"))
    assert r.shown.numbers == (12, 13)
    reads = mapped_reads(call("mcp__a__find", {}, "a.py:3:x\nb.py:9:y\n"), tools.match("mcp__a__find"))
    assert [(r.path, r.shown.numbers) for r in reads] == [("a.py", (3,)), ("b.py", (9,))]
    reads = mapped_reads(call("mcp__a__ls", {}, "a.py\nsrc/b.py\n"), tools.match("mcp__a__ls"))
    assert [(r.path, r.listing) for r in reads] == [("a.py", True), ("src/b.py", True)]
    (r,) = mapped_reads(call("mcp__a__cat", {"p": "c.py", "s": 9, "n": 3}, "x\ny\nz\n"),
                        tools.match("mcp__a__cat"))
    assert (r.start, r.end, r.shown.lines) == (10, 12, ("x", "y", "z"))


def test_a_failed_or_unanswered_mapped_call_reads_nothing():
    tools = load_tool_map(EXAMPLE)
    inp = {"path": "a.py", "start_line": 1, "end_line": 3}
    assert infer(call("mcp__ctx__read_file", inp, "x", is_error=True), tools=tools).reads == []
    assert infer(call("mcp__ctx__read_file", inp, None, interrupted=True), tools=tools).reads == []
    ok = infer(call("mcp__ctx__read_file", inp, "x\ny\nz"), tools=tools)
    assert ok.category == "read" and [(r.path, r.start, r.end) for r in ok.reads] == [("a.py", 1, 3)]
    # without the map the same call is no read
    assert infer(call("mcp__ctx__read_file", inp, "x\ny\nz")).reads == []
