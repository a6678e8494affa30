"""F1, the harmonic mean of coverage and precision (docs/metrics.md §3, "F1").

Stated once here: every record, table, CSV column and gauge that shows an F1 calls
``f1``, so a run's F1 is the same number wherever it is read. ContextBench defines it as
``2 · coverage · precision / (coverage + precision)``; the definition leaves the case
where both are 0 open, and a run that found nothing of the gold and read nothing of it
scores 0, never a division error or NaN.
"""

from __future__ import annotations

__all__ = ["f1"]


def f1(coverage: float, precision: float) -> float:
    """``2PR / (P + R)``; 0.0 when both are 0 (docs/metrics.md §3)."""
    total = coverage + precision
    return 2 * coverage * precision / total if total else 0.0
