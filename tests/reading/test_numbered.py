"""output.numbered: the usual numbered output, checked in bulk, says what the regular
expression says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.reading.output.numbered import _by_expression, _one_run, parse_numbered

#: texts of lines: code, blanks, a separator or a number inside, non-ASCII
_TEXTS = st.sampled_from(["def f(x):", "", "    return x", "a\tb", "x → y", "12\tz", "é ü",
                          "   ", "1:2", "\u0663\u0664"])
#: how a line's head is printed: cat -n / nl (padded, tab), Claude before 2.1 (padded,
#: arrow), Claude 2.1 (plain, tab), and heads that are none of those
_LAYOUTS = st.sampled_from(["padded-tab", "padded-arrow", "plain-tab", "plain-arrow"])


def _head(n: int, layout: str) -> str:
    sep = "\t" if layout.endswith("tab") else "\u2192"
    return (f"{n:>6}" if layout.startswith("padded") else str(n)) + sep


@st.composite
def outputs(draw) -> str:
    layout = draw(_LAYOUTS)
    first = draw(st.sampled_from([1, 7, 95, 998, 9995, 99_990, 999_995, 999_999_990]))
    texts = draw(st.lists(_TEXTS, min_size=1, max_size=25))
    rows = [_head(first + i, layout) + t for i, t in enumerate(texts)]
    damage = draw(st.sampled_from(["none", "none", "trim-last", "junk", "skip", "other-layout",
                                   "trailing-newline", "unicode-digit"]))
    i = draw(st.integers(0, len(rows) - 1))
    if damage == "trim-last":       # a blank last line whose separator was trimmed
        rows[-1] = _head(first + len(rows) - 1, layout)[:-1]
    elif damage == "junk":
        rows[i] = "(12 more lines below)"
    elif damage == "skip" and len(rows) > 1:
        rows[i] = _head(first + i + 1, layout) + "x"
    elif damage == "other-layout":
        other = {"padded-tab": "plain-tab", "plain-tab": "padded-tab",
                 "padded-arrow": "plain-arrow", "plain-arrow": "padded-arrow"}[layout]
        rows[i] = _head(first + i, other) + "x"
    elif damage == "trailing-newline":
        rows.append("")
    elif damage == "unicode-digit":
        rows[i] = rows[i].replace("1", "\u0661", 1)
    return "\n".join(rows)


@settings(max_examples=1500)
@given(outputs())
def test_a_run_checked_in_bulk_is_what_the_expression_finds(text):
    run = _one_run(text)
    if run is not None:
        assert run == _by_expression(text, "tab")
    assert parse_numbered(text) == _by_expression(text, "tab")


def test_the_usual_outputs_are_checked_in_bulk():
    """The outputs every Read and ``cat -n`` prints take the bulk path (a wide run, a
    number growing a digit, a trimmed blank last line)."""
    for layout in ("padded-tab", "padded-arrow", "plain-tab", "plain-arrow"):
        for first, k in ((1, 1), (95, 10), (9990, 40)):
            text = "\n".join(_head(n, layout) + f"line {n}" for n in range(first, first + k))
            assert _one_run(text) is not None, (layout, first)
            assert _one_run(text + "\n" + _head(first + k, layout)[:-1]) is not None
