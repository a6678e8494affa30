"""CI gates: a batch's numbers against thresholds, failures named (docs/replay.md and
docs/compare.md, "CI gate").

``replay --fail-under line.coverage=0.6,file.f1=0.5`` fails the build when the mean of a
metric over the batch's scored runs is below its threshold; ``compare --fail-if-worse
file.f1:0.02`` when arm B is worse than the baseline beyond the margin (a one-sided test
at 2.5%, Holm-corrected over the gates), or lost more of the instances than the baseline.
A gate on a metric that nothing has (no patch for ``editloc.*``, no usage for
``tokens``) fails too: a gate that cannot be checked must not pass in silence; a gate
that cannot fail (too few repositories, ids that name none) passes, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streameval.report.fields import Metric, metric
from streameval.report.inference import clustered_mean, holm
from streameval.scoring.sums import left_mean

__all__ = ["GATE_ALPHA", "GateError", "GateVerdict", "Threshold", "WorseGate", "fail_if_worse",
           "fail_under", "parse_thresholds", "parse_worse"]


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
    scored runs that have the metric, each run once (macro), as the summary table; for
    a metric error records have too (``Metric.of_error_records``: the outcome), over
    every run that has it."""
    records = list(records)
    scored = [r for r in records if "error" not in r]
    failures: list[str] = []
    for t in thresholds:
        runs = records if t.metric.of_error_records else scored
        values = [v for v in (t.metric.value(r) for r in runs) if v is not None]
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


#: a gate fails when B is worse beyond its margin at this one-sided level (after Holm):
#: for one gate, the end of the 95% interval
GATE_ALPHA = 0.025


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """What ``--fail-if-worse`` found: the failures (exit 1 when any), and notes on
    gates that could not fail (they pass, and say why)."""

    failures: list[str]
    notes: list[str]


def _worse_p(row: Any, margin: float, report: Any) -> Any:
    """The one-sided test of "B is worse than A by more than ``margin``": for a
    higher-is-better metric, of the mean difference below -margin; for a lower-is-better
    one, above +margin."""
    better = row.metric.better
    inf = clustered_mean(row.diffs, row.clusters, unit=report.unit, null=-better * margin,
                         binary=row.metric.binary, flips=report.flips, seed=report.seed)
    return inf, inf.p_below if better > 0 else inf.p_above


def fail_if_worse(report: Any, gates: list[WorseGate]) -> GateVerdict:
    """Per comparison: a failure when B lost more than the report's margin of
    percentage points more of the instances than A (its pairs would be those it happened
    to finish), and per gate when B is worse than A beyond the margin (the one-sided
    p-value of ``clustered_mean`` against -MARGIN, or +MARGIN for a lower-is-better
    metric, below 2.5% once Holm-corrected over every gate of the report), or when no
    pair has the metric (a gate that cannot be checked does not pass).

    A metric with 2 repositories or fewer has no repository-level test: the gate is not
    judged (a note says so) unless the report's unit is ``instance``; nor is one whose
    units include ids that name no repository (each a unit of its own): it cannot fail,
    and a note says why. A gate whose test
    cannot go below 2.5% (its ``Floor``: few repositories, few random flips), or gates
    of which Holm's correction leaves none a chance, pass with a note saying so."""
    failures: list[str] = []
    notes: list[str] = []
    tests: list[tuple[str, Any, Any, float, float]] = []
    floors: list[float] = []      # each test's smallest one-sided p
    for c in report.comparisons:
        ra, rb = c.lost_points
        if gates and rb - ra > report.missing_margin:
            failures.append(f"{c.b} vs {c.a}: {c.losses()} ({rb:.0f}% against {ra:.0f}%, "
                            f"more than {report.missing_margin:g} points apart): its pairs "
                            "are the instances it happened to finish")
        rows = {r.metric.name: r for r in c.rows}
        for g in gates:
            row = rows.get(g.name)
            if row is None or not row.inference.pairs:
                failures.append(f"{g.name}: {c.b} vs {c.a}: no pair has it; the gate cannot "
                                "pass")
                continue
            inf, p = _worse_p(row, g.margin, report)
            if inf.unit != report.unit:
                notes.append(f"{g.name}: {c.b} vs {c.a}: not judged ({inf.reason}); "
                             "--unit instance judges these repositories' instances")
                continue
            if inf.unit == "repository" and inf.unnamed:
                # each id with no repository is a unit of its own: the test would be
                # over units that need not be independent, not over repositories
                some = ("1 pair names" if inf.unnamed == 1 else
                        f"{inf.unnamed} pairs name")
                notes.append(f"{g.name}: {c.b} vs {c.a}: {some} no repository and count as "
                             f"one each, so its {inf.units} units are not all repositories: "
                             "this gate cannot fail (--unit instance judges the instances; "
                             "a repo field in the records lets repositories be judged)")
                continue
            if p is None:
                failures.append(f"{g.name}: {c.b} vs {c.a}: no test is possible "
                                f"({inf.reason}); the gate cannot pass")
                continue
            floor = inf.floor
            if floor is not None and floor.one_sided > GATE_ALPHA:
                notes.append(f"{g.name}: {c.b} vs {c.a}: {floor.given} this gate cannot "
                             f"fail ({floor.test}'s smallest one-sided p is "
                             f"{floor.one_sided:.3g}, above {GATE_ALPHA})")
            tests.append((g.name, c, row, g.margin, p))
            floors.append(floor.one_sided if floor is not None else 0.0)
    # Holm rejects nothing unless the smallest p is below alpha / m: when no test can go
    # that low, no gate can fail, though each alone could
    if len(tests) > 1 and min(floors) * len(tests) >= GATE_ALPHA >= min(floors):
        notes.append(f"with {len(tests)} gate tests Holm's correction asks the first for a "
                     f"one-sided p below {GATE_ALPHA / len(tests):.3g}; none of them can go "
                     f"below {min(floors):.3g}: no gate can fail")
    adjusted = holm([t[4] for t in tests])
    for (name, c, row, margin, p), p_holm in zip(tests, adjusted):
        if p_holm is not None and p_holm < GATE_ALPHA:
            e = row.inference
            interval = "no interval" if e.low is None else \
                f"95% interval [{e.low:+.4g}, {e.high:+.4g}]"
            side = "below" if row.metric.better > 0 else "above"
            bound = (-margin if row.metric.better > 0 else margin) or 0.0
            failures.append(f"{name}: {c.b} is worse than {c.a}: B-A {e.estimate:+.4g}, "
                            f"{interval}; one-sided p {p:.3g} that it is {side} {bound:+.4g} "
                            f"(Holm over {len(tests)} gate test(s): {p_holm:.3g}; "
                            f"{e.pairs} pairs, {e.units_text})")
    return GateVerdict(failures, notes)
