"""Float sums in the public evaluator's order, whatever Python runs them.

The evaluator adds per-step coverages and per-instance scores with the builtin ``sum``
on CPython 3.11: one float addition after another, left to right. From 3.12 the
builtin compensates rounding (Neumaier), so the same list can end one unit in the last
place apart. Every mean streameval reports goes through ``left_sum`` so records are
byte-identical on every supported Python and equal the evaluator's (docs/metrics.md §4).
"""

from __future__ import annotations

from collections.abc import Iterable


def left_sum(values: Iterable[float]) -> float:
    """``values[0] + values[1] + ...`` with plain float additions, in order."""
    total = 0.0
    for v in values:
        total += v
    return total


def left_mean(values: list[float]) -> float | None:
    """The mean as the evaluator computes it; None for no values."""
    return left_sum(values) / len(values) if values else None
