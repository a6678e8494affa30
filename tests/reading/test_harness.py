"""output.harness: the wrapper lines of a harness, found without looking at every line,
are those a look at every line finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.reading.output.harness import _WRAPPER, clean_lines

_LINES = st.sampled_from(["<output>", "</output>", "[The command completed.]", "[x", "<a",
                          "plain", "", "<returncode>0</returncode>", "  <output>",
                          "[Python Interpreter: /x]"])


@settings(max_examples=1000)
@given(st.lists(_LINES, min_size=1, max_size=10))
def test_wrapper_lines_found_by_search_are_those_of_every_line(lines):
    output = "\n".join(lines)
    want = [ln for ln in output.split("\n") if not (ln[:1] in ("<", "[") and _WRAPPER.match(ln))]
    assert clean_lines(output) == want
