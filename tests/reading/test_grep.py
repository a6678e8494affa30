"""output.grep: one file's numbered hits read at once say what the parser says, line by
line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.reading.output.grep import GrepShape, _by_line, _one_file, parse_grep

_LINES = st.sampled_from(["12:def f(x):", "13-    return x", "7:", "140:a:b", "--", "",
                          "src/x.py/y:3:z", "Binary file src/x.py matches",
                          "[... 40 characters elided ...]", "  9:indented", "\u0663:arabic",
                          "99:tab\there", "100-x\r"])


@settings(max_examples=1500)
@given(st.lists(_LINES, min_size=1, max_size=12), st.booleans(),
       st.sampled_from(["src/x.py", "x.py", "12"]))
def test_one_files_hits_at_once_are_the_parsers(lines, context, single):
    shape = GrepShape("grep", True, single, context)
    hits = _one_file(lines, shape)
    if hits is not None:
        assert hits == _by_line(lines, shape)
    assert parse_grep(lines, shape) == _by_line(lines, shape)


def test_the_usual_grep_n_output_is_read_at_once():
    lines = ["12:def f(x):", "30:    def g(self):", "31-        pass"]
    assert _one_file(lines, GrepShape("grep", True, "x.py", False)) is not None
