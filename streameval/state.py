"""Incremental ContextBench metrics for one instance.

INTERFACE STUB (owned by the state helper).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Step


@dataclass(slots=True)
class GranularityNumbers:
    """Current numbers of one granularity (P = the context so far, G = gold)."""

    coverage: float
    precision: float
    intersection: int
    gold_size: int
    pred_size: int
    auc_coverage: float
    redundancy: float
    step_sum: int  # Σ_t |step t|


@dataclass(slots=True)
class Snapshot:
    """What the exporter and abort policies read, cheap to take at any time."""

    num_steps: int
    granularities: dict[str, GranularityNumbers]
    lines_read: int   # |union of lines read|
    bytes_read: int   # |union of bytes read|


class InstanceState:
    """Consumes Steps one at a time; cost per step proportional to what it adds.

    ``state.py`` knows nothing of trace formats, disk layout or Prometheus.
    """

    def __init__(self, gold, view, symbols=None): ...

    def add_step(self, step: Step) -> dict[str, float]:
        """Add one step; return per-step coverage by granularity (trajectory rule)."""

    def set_final_context(self, context: Step) -> None:
        """Use a stated final context instead of the union of steps."""

    def snapshot(self) -> Snapshot: ...

    def record(self, patch: str | None = None) -> dict:
        """The METRICS.md section 5 record; an ``editloc`` key only when a patch is given."""
