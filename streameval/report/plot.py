"""Coverage curves as SVG: the per-step coverage of a record, by granularity, and the
mean curves of a comparison's arms with their bands.

The same curve the Grafana "Run" dashboard draws live, drawn from a finished record
(docs/metrics.md §5 ``trajectory.steps``), with no plotting dependency: SVG is
text, renders in browsers and on GitHub, and diffs in review.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from streameval.model import GRANULARITIES
from streameval.untrusted import bounded, escaped

COLORS = {"file": "#1f77b4", "symbol": "#ff7f0e", "span": "#2ca02c", "line": "#d62728"}
#: one colour per arm of a comparison, in arm order (then repeated)
ARM_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
#: characters of a text from a record (a run id in a title) drawn at most
TEXT_MAX = 200


def _text(value: str) -> str:
    """A text from a record as SVG text: markup escaped, and what XML cannot hold (a
    control character, an escape sequence, a noncharacter) written as ``\x1b``, so the
    file stays well-formed (``untrusted.bounded``; a long value keeps its start and a
    hash)."""
    return escape(bounded(value, TEXT_MAX, escaped))


def coverage_svg(record: dict[str, Any], width: int = 640, height: int = 320,
                 title: str | None = None) -> str:
    """An SVG line chart of ``record``'s per-step coverage (0..1) for each granularity."""
    steps = record.get("trajectory", {}).get("steps", [])
    left, right, top, bottom = 48, 150, 36, 40
    pw, ph = width - left - right, height - top - bottom
    n = max(len(steps), 1)

    def x(i: int) -> float:  # step i (1-based) -> pixel
        return left + (pw * (i - 1) / (n - 1) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return top + ph * (1.0 - v)

    title = title or f"{record.get('run_id', record.get('instance_id', ''))}: coverage per step"
    ticks = sorted({1, n, *range(5, n, 5)}) if steps else []
    out = _frame(width, height, left, top, pw, ph, title, ticks, x, y)
    for k, g in enumerate(GRANULARITIES):
        pts = " ".join(f"{x(s['step']):.1f},{y(float(s['coverage'][g])):.1f}" for s in steps)
        if pts:
            out.append(f'<polyline data-granularity="{g}" points="{pts}" fill="none" '
                       f'stroke="{COLORS[g]}" stroke-width="2"/>')
        ly = top + 16 * k + 8
        auc = record.get("trajectory", {}).get("auc_coverage", {}).get(g)
        label = g if auc is None else f"{g} (AUC {auc:.2f})"
        out.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 28}" y2="{ly}" '
                   f'stroke="{COLORS[g]}" stroke-width="2"/>'
                   f'<text x="{left + pw + 32}" y="{ly + 4}">{_text(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def arms_svg(curves: Sequence[tuple[str, Sequence[float], Sequence[float], Sequence[float]]],
             title: str, width: int = 640, height: int = 320) -> str:
    """An SVG of each arm's mean per-step coverage (a line) and its 95% band (a shaded
    polygon): ``curves`` holds ``(arm, mean, low, high)``, step 1 first."""
    left, right, top, bottom = 48, 150, 36, 40
    pw, ph = width - left - right, height - top - bottom
    n = max((len(m) for _a, m, _l, _h in curves), default=1)

    def x(i: int) -> float:
        return left + (pw * (i - 1) / (n - 1) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return top + ph * (1.0 - max(0.0, min(1.0, v)))

    ticks = sorted({1, n, *range(10, n, 10)}) if n > 1 else [1]
    out = _frame(width, height, left, top, pw, ph, title, ticks, x, y)
    for k, (arm, mean, low, high) in enumerate(curves):
        color = ARM_COLORS[k % len(ARM_COLORS)]
        if mean:
            band = [f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(high, 1)] + [
                f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(low, 1)))]
            out.append(f'<polygon data-arm="{_text(arm)}" data-band="95" '
                       f'points="{" ".join(band)}" fill="{color}" fill-opacity="0.15" '
                       f'stroke="none"/>')
            pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(mean, 1))
            out.append(f'<polyline data-arm="{_text(arm)}" points="{pts}" fill="none" '
                       f'stroke="{color}" stroke-width="2"/>')
        ly = top + 16 * k + 8
        out.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 28}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>'
                   f'<text x="{left + pw + 32}" y="{ly + 4}">{_text(arm[:16])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _frame(width: int, height: int, left: float, top: float, pw: float, ph: float,
           title: str, ticks: list[int], x, y) -> list[str]:
    """The parts every coverage plot shares: the canvas, its title, the coverage grid
    (0 to 1) and the step axis with its ``ticks``."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{_text(title)}</text>']
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v:g}</text>')
    for i in ticks:
        out.append(f'<text x="{x(i):.1f}" y="{top + ph + 16}" text-anchor="middle">{i}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle">step</text>')
    return out
