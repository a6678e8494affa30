"""CI gates: a batch's numbers against thresholds, failures named (docs/replay.md, "CI gate").

``replay --fail-under line.coverage=0.6,file.f1=0.5`` fails the build when the mean of a
metric over the batch's scored runs is below its threshold. A gate on a metric that no
run has (no patch for ``editloc.*``, no usage for ``tokens``) fails too: a gate that
cannot be checked must not pass in silence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streameval.report.fields import Metric, metric
from streameval.scoring.sums import left_mean

__all__ = ["GateError", "Threshold", "fail_under", "parse_thresholds"]


class GateError(ValueError):
    """A threshold that cannot be read; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Threshold:
    metric: Metric
    limit: float


def parse_thresholds(text: str) -> list[Threshold]:
    """``line.coverage=0.6,file.f1=0.5`` -> thresholds; GateError naming a bad part."""
    out: list[Threshold] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        try:
            m = metric(name.strip())
        except KeyError as exc:
            raise GateError(str(exc.args[0])) from None
        try:
            limit = float(value)
        except ValueError:
            limit = float("nan")
        if not sep or limit != limit:
            raise GateError(f"--fail-under wants METRIC=NUMBER, got {part!r}")
        out.append(Threshold(m, limit))
    if not out:
        raise GateError(f"--fail-under names no metric: {text!r}")
    return out


def fail_under(records: Iterable[dict[str, Any]], thresholds: list[Threshold]) -> list[str]:
    """One line per failed threshold (empty: the gate passes). The mean is over the
    scored runs that have the metric, each run once (macro), as the summary table."""
    records = [r for r in records if "error" not in r]
    failures: list[str] = []
    for t in thresholds:
        values = [v for v in (t.metric.value(r) for r in records) if v is not None]
        mean = left_mean(values)
        if mean is None:
            failures.append(f"{t.metric.name}: no scored run has it, so the gate "
                            f"{t.metric.name} >= {t.limit:g} cannot pass")
        elif mean < t.limit:
            failures.append(f"{t.metric.name}: mean {mean:.4g} over {len(values)} run(s) is "
                            f"below {t.limit:g}")
    return failures
