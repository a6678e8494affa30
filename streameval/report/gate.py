"""CI gates: a batch's numbers against thresholds, failures named (docs/replay.md and
docs/compare.md, "CI gate").

``replay --fail-under line.coverage=0.6,file.f1=0.5`` fails the build when the mean of a
metric over the batch's scored runs is below its threshold; ``compare --fail-if-worse
file.f1:0.02`` when arm B is worse than the baseline beyond the margin with 95%
confidence. A gate on a metric that nothing has (no patch for ``editloc.*``, no usage
for ``tokens``) fails too: a gate that cannot be checked must not pass in silence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streameval.report.fields import Metric, metric
from streameval.scoring.sums import left_mean

__all__ = ["GateError", "Threshold", "WorseGate", "fail_if_worse", "fail_under", "parse_thresholds",
           "parse_worse"]


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


# --------------------------------------------------------------------------- compare


@dataclass(frozen=True, slots=True)
class WorseGate:
    """``--fail-if-worse METRIC[:MARGIN]``: fail when B is worse than A by more than
    MARGIN (in the metric's unit) with 95% confidence."""

    name: str
    margin: float


def parse_worse(text: str) -> list[WorseGate]:
    """``file.f1:0.02,line.coverage`` -> gates (margin 0 when not given); GateError
    naming a bad part. Metric names are checked against the report's metrics later."""
    out: list[WorseGate] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, margin = part.rpartition(":") if ":" in part else (part, "", "0")
        try:
            metric(name)
            value = float(margin)
        except KeyError as exc:
            raise GateError(str(exc.args[0])) from None
        except ValueError:
            value = float("nan")
        if value != value or value < 0:
            raise GateError(f"--fail-if-worse wants METRIC[:MARGIN] with MARGIN >= 0, "
                            f"got {part!r}")
        out.append(WorseGate(name, value))
    if not out:
        raise GateError(f"--fail-if-worse names no metric: {text!r}")
    return out


def fail_if_worse(report: Any, gates: list[WorseGate]) -> list[str]:
    """One line per comparison and gate that fails: B is worse than A beyond the margin
    (for a higher-is-better metric, the upper end of B-A's interval is below -MARGIN;
    for a lower-is-better one, its lower end is above +MARGIN), or the metric has no
    pair to judge (a gate that cannot be checked does not pass)."""
    failures: list[str] = []
    for c in report.comparisons:
        rows = {r.metric.name: r for r in c.rows}
        for g in gates:
            row = rows.get(g.name)
            worse = row.worse_than(g.margin) if row is not None else None
            if worse is None:
                failures.append(f"{g.name}: {c.b} vs {c.a}: no interval to judge (no pair "
                                "has it, or its pairs are of one repository); the gate "
                                "cannot pass")
            elif worse:
                e = row.estimate
                side = (f"upper end {e.high:+.4g} below {-g.margin:+.4g}" if row.metric.better > 0
                        else f"lower end {e.low:+.4g} above {g.margin:+.4g}")
                failures.append(f"{g.name}: {c.b} is worse than {c.a}: B-A {e.mean:+.4g}, 95% "
                                f"interval [{e.low:+.4g}, {e.high:+.4g}], {side} "
                                f"({e.pairs} pairs)")
    return failures
