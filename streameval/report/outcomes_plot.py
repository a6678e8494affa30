"""The pictures of ``streameval outcomes --html``, as SVG (no plotting dependency):

- **the early-warning curve** of a signal: its AUROC for failure at each step k and at
  the end, with 95% intervals, against the 0.5 of chance;
- **the solve rate by bin** of a signal at one step: one bar per quantile bin, with
  its interval, against the solve rate of all the runs there.

As in ``report.forest``, colour says only what the reader must notice: a figure with a
reason not to be trusted is amber and its interval dashed; everything else is grey or
blue. Each mark carries its numbers in a ``<title>`` (a tooltip) and its step or bin as
data attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from streameval.report.forest import STATE_COLORS
from streameval.report.outcome_stats import Bin, Interval

__all__ = ["auroc_svg", "bins_svg"]

_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 250, 160, 34, 10, 24, 28
_BLUE = "#1f77b4"


def _svg(title: str, kind: str, w: int, note: str = "") -> list[str]:
    """The canvas (``w`` wide), its title and (right-aligned, grey) a note."""
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{_H}" '
            f'viewBox="0 0 {w} {_H}" font-family="sans-serif" font-size="10" '
            f'data-plot="{kind}" role="img" aria-label="{escape(title)}">',
            f'<rect width="{w}" height="{_H}" fill="white"/>',
            f'<text x="{_LEFT}" y="14" font-size="12">{escape(title)}</text>',
            f'<text x="{w - _RIGHT}" y="14" text-anchor="end" fill="#777">{escape(note)}</text>']


def _y(v: float) -> float:
    return _TOP + (_H - _TOP - _BOTTOM) * (1.0 - max(0.0, min(1.0, v)))


def _grid(out: list[str], w: int, reference: float | None) -> None:
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{_LEFT}" y1="{_y(v):.1f}" x2="{w - _RIGHT}" y2="{_y(v):.1f}" '
                   f'stroke="#eee"/><text x="{_LEFT - 4}" y="{_y(v) + 3:.1f}" '
                   f'text-anchor="end">{v:g}</text>')
    if reference is not None:
        out.append(f'<line x1="{_LEFT}" y1="{_y(reference):.1f}" x2="{w - _RIGHT}" '
                   f'y2="{_y(reference):.1f}" stroke="#888" stroke-dasharray="4 3" '
                   f'data-reference="{reference:.3f}"/>')


def _whisker(out: list[str], x: float, iv: Interval, color: str, tip: str,
             attrs: str) -> None:
    """An estimate as a dot and its interval as a vertical line (dashed, amber, when the
    figure is not to be trusted)."""
    untrusted = bool(iv.reasons)
    c = STATE_COLORS["untrusted"] if untrusted else color
    dash = ' stroke-dasharray="3 2"' if untrusted else ""
    out.append(f"<g {attrs} data-trusted=\"{'no' if untrusted else 'yes'}\">"
               f"<title>{escape(tip)}</title>")
    if iv.low is not None and iv.high is not None:
        out.append(f'<line x1="{x:.1f}" y1="{_y(iv.low):.1f}" x2="{x:.1f}" y2="{_y(iv.high):.1f}" '
                   f'stroke="{c}" stroke-width="1.5"{dash}/>')
    out.append(f'<circle cx="{x:.1f}" cy="{_y(iv.estimate or 0):.1f}" r="3" fill="{c}"/></g>')


def _tip(iv: Interval, what: str) -> str:
    if iv.estimate is None:
        return f"{what}: no figure"
    band = "no interval" if iv.low is None else f"95% interval {iv.low:.3f} to {iv.high:.3f}"
    why = f"; not to be trusted: {'; '.join(iv.reasons)}" if iv.reasons else ""
    return f"{what}: {iv.estimate:.3f}, {band}, {iv.runs} runs{why}"


def auroc_svg(title: str, points: Sequence[tuple[str, Interval]], note: str = "") -> str:
    """The early-warning curve: ``points`` are (step label, AUROC) in step order, the end
    last; a step without a figure leaves a gap."""
    out = _svg(title, "auroc", _W, note)
    _grid(out, _W, 0.5)
    n = max(len(points), 1)
    pw = _W - _LEFT - _RIGHT

    def x(i: int) -> float:
        return _LEFT + pw * (i + 0.5) / n

    line: list[str] = []
    marks: list[str] = []
    for i, (label, iv) in enumerate(points):
        out.append(f'<text x="{x(i):.1f}" y="{_H - 12}" text-anchor="middle">{escape(label)}</text>')
        if iv.estimate is None:
            continue
        line.append(f"{x(i):.1f},{_y(iv.estimate):.1f}")
        _whisker(marks, x(i), iv, _BLUE, _tip(iv, f"AUROC at {label}"),
                 f'data-step="{escape(label)}" data-auroc="{iv.estimate:.4f}"')
    if len(line) > 1:
        out.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="{_BLUE}" '
                   'stroke-opacity="0.4"/>')
    out.extend(marks)
    out.append(f'<text x="{_LEFT + pw / 2:.1f}" y="{_H - 1}" text-anchor="middle">AUROC for '
               "failure at step k</text></svg>")
    return "\n".join(out) + "\n"


def bins_svg(title: str, bins: Sequence[Bin], labels: Sequence[tuple[str, str]],
             overall: float | None) -> str:
    """The solve rate of each bin (a bar, its interval a whisker), against ``overall``;
    ``labels``: each bin's (short label for the axis, full one for its tooltip)."""
    n = max(len(bins), 1)
    w = max(_W, _LEFT + _RIGHT + 64 * n)   # room for each bin's label
    out = _svg(title, "bins", w)
    _grid(out, w, overall)
    pw = w - _LEFT - _RIGHT
    bar = min(36.0, pw / n * 0.6)
    for i, (b, (short, label)) in enumerate(zip(bins, labels)):
        cx = _LEFT + pw * (i + 0.5) / n
        est = b.rate.estimate or 0.0
        out.append(f'<rect x="{cx - bar / 2:.1f}" y="{_y(est):.1f}" width="{bar:.1f}" '
                   f'height="{_y(0) - _y(est):.1f}" fill="#c6dbef"/>')
        _whisker(out, cx, b.rate, _BLUE, _tip(b.rate, f"solve rate of {label}"),
                 f'data-bin="{escape(label)}" data-rate="{est:.4f}"')
        out.append(f'<text x="{cx:.1f}" y="{_H - 12}" text-anchor="middle" font-size="9">'
                   f"{escape(short)}</text>")
    out.append(f'<text x="{_LEFT + pw / 2:.1f}" y="{_H - 1}" text-anchor="middle">solve rate '
               "by quantile bin</text></svg>")
    return "\n".join(out) + "\n"
