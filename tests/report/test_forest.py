"""The forest plot: one axis per scale with a line at 0, each difference placed on it
with its interval, colour only for significant or untrusted rows."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streameval.report.forest import STATE_COLORS, Mark, _ticks, forest_svg


@given(lo=st.floats(-1e7, 0), hi=st.floats(0, 1e7))
def test_ticks_are_round_and_span_the_range(lo, hi):
    """A forest's axis always holds 0 (the line the differences are read against)."""
    if hi - lo < 1e-6:
        return
    ticks = _ticks(lo, hi)
    assert 2 <= len(ticks) <= 11
    assert lo - 1e-9 * abs(lo) <= ticks[0] and ticks[-1] <= hi + 1e-9 * abs(hi)
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** int(f"{step:e}".split("e")[1])
    assert round(mantissa, 6) in (1, 2, 5, 10)


def _x(svg: str, metric: str) -> tuple[float, float, float]:
    """A mark's interval ends and point, in pixels."""
    g = re.search(rf'data-metric="{re.escape(metric)}".*?</g>', svg, re.S).group(0)
    line = re.search(r'<line x1="([\d.]+)" y1="[\d.]+" x2="([\d.]+)"', g)
    cx = float(re.search(r'cx="([\d.]+)"', g).group(1))
    return (float(line.group(1)), float(line.group(2)), cx) if line else (cx, cx, cx)


def test_marks_sit_on_their_panel_axis_around_the_zero_line():
    svg = forest_svg([
        ("share", [Mark("line.f1", 0.1, 0.05, 0.15, "better"),
                   Mark("resolved", -0.02, -0.06, 0.01, "plain")]),
        ("tokens", [Mark("tokens", -120_000, -200_000, -40_000, "untrusted")]),
    ])
    assert re.findall(r'data-scale="(\w+)"', svg) == ["share", "tokens"]
    zeros = [float(x) for x in re.findall(r'class="zero" x1="([\d.]+)"', svg)]
    assert len(zeros) == 2
    lo, hi, point = _x(svg, "line.f1")
    assert zeros[0] < lo < point < hi
    lo, hi, point = _x(svg, "resolved")
    assert lo < point < zeros[0] < hi
    lo, hi, point = _x(svg, "tokens")
    assert lo < point < hi < zeros[1]
    # the share axis and the token axis are not the same axis
    assert "200k" in svg or "-200k" in svg or "-150k" in svg


def test_colour_and_dashes_say_significant_or_untrusted():
    svg = forest_svg([("share", [Mark("a", 0.1, 0.05, 0.15, "better"),
                                 Mark("b", -0.1, -0.15, -0.05, "worse"),
                                 Mark("c", 0.01, -0.05, 0.07, "plain"),
                                 Mark("d", 0.2, 0.1, 0.3, "untrusted"),
                                 Mark("e", 0.3, None, None, "untrusted")])])
    for metric, state in zip("abcde", ("better", "worse", "plain", "untrusted", "untrusted")):
        g = re.search(rf'data-metric="{metric}" data-state="{state}">.*?</g>', svg, re.S).group(0)
        assert STATE_COLORS[state] in g
        assert ("stroke-dasharray" in g) == (metric == "d")
    # no interval: a hollow point only
    e = re.search(r'data-metric="e".*?</g>', svg, re.S).group(0)
    assert "<line" not in e and 'fill="white"' in e


@pytest.mark.parametrize("value", [0.0, 5.0, -3e6])
def test_a_single_point_still_gets_an_axis(value):
    svg = forest_svg([("usd", [Mark("cost_usd", value, None, None, "plain")])])
    assert svg.count('class="zero"') == 1 and "nan" not in svg
