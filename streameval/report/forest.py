"""A forest plot as SVG: each metric's difference B - A with its interval, a line at 0,
one axis per kind of number (shares, steps, tokens, dollars, seconds: a difference in
tokens and one in F1 cannot share an axis).

Colour says only what the reader must notice: a difference that is significant (green
when B is the better arm, red when it is the worse one) or a row not to be trusted
(amber, its interval dashed). Everything else is grey. Each mark carries its numbers in
a ``<title>`` (a tooltip) and its metric and state as data attributes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["SCALE_TITLES", "STATE_COLORS", "Mark", "forest_svg"]

#: what a difference on each scale is in, for the panel's title
SCALE_TITLES = {"share": "difference of a share (0 to 1)", "steps": "difference in steps",
                "tokens": "difference in tokens", "usd": "difference in US dollars",
                "seconds": "difference in seconds", "count": "difference in counts"}
STATE_COLORS = {"plain": "#666", "better": "#1a7f37", "worse": "#c62828",
                "untrusted": "#b26b00"}
_ROW, _HEAD, _AXIS, _LEFT, _RIGHT = 22, 26, 30, 190, 24


@dataclass(frozen=True, slots=True)
class Mark:
    """One row of a forest: ``state`` is plain, better, worse (significant) or untrusted."""

    label: str
    estimate: float
    low: float | None
    high: float | None
    state: str
    note: str = ""


def _ticks(lo: float, hi: float) -> list[float]:
    """Round numbers (1, 2 or 5 times a power of ten) spanning lo..hi, about five."""
    span = hi - lo
    raw = span / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _label(v: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _panel(scale: str, marks: Sequence[Mark], top: float, width: int) -> list[str]:
    ends = [x for m in marks for x in (m.estimate, m.low, m.high) if x is not None] + [0.0]
    lo, hi = min(ends), max(ends)
    pad = (hi - lo) * 0.06 or max(abs(hi), 1e-9) * 0.5 or 1.0
    lo, hi = lo - pad, hi + pad
    pw = width - _LEFT - _RIGHT

    def x(v: float) -> float:
        return _LEFT + pw * (v - lo) / (hi - lo)

    bottom = top + _HEAD + _ROW * len(marks)
    out = [f'<g class="panel" data-scale="{scale}">',
           f'<text x="8" y="{top + 16}" font-size="13" font-weight="bold">'
           f'{escape(SCALE_TITLES.get(scale, scale))}</text>']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" y1="{top + _HEAD - 4}" x2="{x(t):.1f}" '
                   f'y2="{bottom}" stroke="#eee"/><text x="{x(t):.1f}" y="{bottom + 16}" '
                   f'text-anchor="middle" fill="#555">{_label(t)}</text>')
    out.append(f'<line class="zero" x1="{x(0):.1f}" y1="{top + _HEAD - 6}" x2="{x(0):.1f}" '
               f'y2="{bottom + 2}" stroke="#222" stroke-width="1.2"/>')
    for i, m in enumerate(marks):
        y = top + _HEAD + _ROW * i + _ROW / 2
        color = STATE_COLORS[m.state]
        out.append(f'<g class="mark" data-metric="{escape(m.label)}" data-state="{m.state}">'
                   f'<title>{escape(m.note or m.label)}</title>'
                   f'<text x="{_LEFT - 10}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{escape(m.label)}</text>')
        if m.low is not None and m.high is not None:
            dash = ' stroke-dasharray="4 3"' if m.state == "untrusted" else ""
            out.append(f'<line x1="{x(m.low):.1f}" y1="{y:.1f}" x2="{x(m.high):.1f}" '
                       f'y2="{y:.1f}" stroke="{color}" stroke-width="2"{dash}/>')
            fill = color
        else:
            fill = "white"      # no interval: a hollow point
        out.append(f'<circle cx="{x(m.estimate):.1f}" cy="{y:.1f}" r="4.5" fill="{fill}" '
                   f'stroke="{color}" stroke-width="1.5"/></g>')
    out.append("</g>")
    return out


def forest_svg(panels: Sequence[tuple[str, Sequence[Mark]]], width: int = 720) -> str:
    """Panels of marks, each ``(scale, marks)`` on an axis of its own, stacked."""
    parts: list[str] = []
    top = 4.0
    for scale, marks in panels:
        if marks:
            parts += _panel(scale, marks, top, width)
            top += _HEAD + _ROW * len(marks) + _AXIS
    height = int(top + 4)
    return (f'<svg class="forest" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" '
            f'font-size="12" role="img"><rect width="{width}" height="{height}" fill="white"/>'
            + "\n".join(parts) + "</svg>\n")
