"""Which signals foretell failure (``streameval outcomes``): for every per-run signal,
gold-free and gold, its AUROC for failure and the solve rate by quantile bin, at the end
of the runs and at step k using only what was known by then (docs/outcomes.md §5).

The runs are the records whose outcome is known (``resolved`` true or false) and that
have signals (error records have none: counted apart). At step k they are the runs
that reached step k (a run that ended before could not have been stopped there), with
the values their records kept at checkpoint k (``scoring.signals.values_at``).

Each signal is read in a direction stated here before any data is seen, so an AUROC
above 0.5 says the signal foretells failure the way a policy would read it, and one
below 0.5 the opposite: every gold-free signal and the steps to the first gold read
as "higher foretells failure", the gold measures (coverage, precision, F1, AUC) as
"lower foretells failure". A run with gold that had read none by step k has its
first-gold step as "not yet": above every step (``math.inf``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streameval.report.arms import cluster_of
from streameval.report.inference import level_of
from streameval.report.outcome_stats import (
    MIN_RUNS,
    Bin,
    Interval,
    auroc_interval,
    quantile_bins,
    share_interval,
)
from streameval.scoring.signals import (
    GOLD_MEASURES,
    GOLD_SIGNALS,
    SIGNALS,
    checkpoint_steps,
    is_checkpoint,
    values_at,
)

__all__ = ["DEFAULT_BINS", "LOWER_FORETELLS", "OutcomeReport", "SignalCell", "StepRow",
           "analyse", "default_steps", "direction"]

DEFAULT_BINS = 4
#: the signals read as "lower foretells failure" (the gold measures); every other one,
#: as "higher foretells failure"
LOWER_FORETELLS = frozenset(s for s in GOLD_SIGNALS if s.rsplit(".", 1)[-1] in GOLD_MEASURES)
#: signals whose null, for a run with gold, means "not yet" (above every step)
_NOT_YET = frozenset({"first_gold_file_step", "first_gold_line_step"})
#: at a checkpoint every run's ``steps`` is k: no signal there
_CONSTANT_AT_K = frozenset({"steps"})


def direction(signal: str) -> int:
    """+1: higher values foretell failure; -1: lower values do."""
    return -1 if signal in LOWER_FORETELLS else 1


@dataclass(slots=True)
class SignalCell:
    """One signal at one step (None: the end): its AUROC for failure and its bins."""

    signal: str
    step: int | None
    runs: int
    failed: int
    auroc: Interval
    bins: list[Bin] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"signal": self.signal, "step": self.step, "runs": self.runs,
                "failed": self.failed, "direction": direction(self.signal),
                "auroc": self.auroc.to_json(), "bins": [b.to_json() for b in self.bins]}


@dataclass(slots=True)
class StepRow:
    """The runs that reached step k (None: every run, at its end), and their solve rate."""

    step: int | None
    runs: int
    failed: int
    solve_rate: Interval

    def to_json(self) -> dict:
        return {"step": self.step, "runs": self.runs, "failed": self.failed,
                "solve_rate": self.solve_rate.to_json()}


@dataclass(slots=True)
class OutcomeReport:
    records: int
    #: records with a known outcome and signals: the runs studied
    runs: int
    no_outcome: int
    no_signals: int
    repositories: int
    steps: list[int]
    bins: int
    unit: str
    rows: list[StepRow]
    #: signal -> its cells, at each of ``steps`` then at the end
    cells: dict[str, list[SignalCell]]
    warnings: list[str] = field(default_factory=list)

    @property
    def solve_rate(self) -> Interval:
        return self.rows[-1].solve_rate

    def to_json(self) -> dict:
        return {"records": self.records, "runs": self.runs, "no_outcome": self.no_outcome,
                "no_signals": self.no_signals, "repositories": self.repositories,
                "steps": self.steps, "bins": self.bins, "unit": self.unit,
                "solve_rate": self.solve_rate.to_json(), "warnings": self.warnings,
                "by_step": [r.to_json() for r in self.rows],
                "signals": {name: [c.to_json() for c in cells]
                            for name, cells in self.cells.items()}}


@dataclass(slots=True)
class _Run:
    resolved: bool
    cluster: str | None
    has_gold: bool
    last: int
    record: dict[str, Any]


def _runs(records: Iterable[dict[str, Any]]) -> tuple[list[_Run], int, int, int]:
    """The runs studied, and the records counted: all, without an outcome, without
    signals (error records)."""
    out: list[_Run] = []
    total = no_outcome = no_signals = 0
    for rec in records:
        total += 1
        if not isinstance(rec.get("resolved"), bool):
            no_outcome += 1
            continue
        end = values_at(rec)
        if end is None:
            no_signals += 1
            continue
        out.append(_Run(rec["resolved"], cluster_of(rec)[0],
                        end.get("line.coverage") is not None, int(end["steps"] or 0), rec))
    return out, total, no_outcome, no_signals


def default_steps(last_steps: Sequence[int]) -> list[int]:
    """5, 10, 20, 40, ... (5·2^i) while at least ``MIN_RUNS`` runs reached the step."""
    out = []
    k = 5
    while sum(1 for s in last_steps if s >= k) >= MIN_RUNS or not out:
        out.append(k)
        k *= 2
    return out


def _value(values: dict[str, Any], signal: str, has_gold: bool) -> float | None:
    """The run's value of ``signal``; None when it has none (NaN, an infinity or no
    number, as some writers put in JSON: ``Metric.value``'s rule), but ``math.inf`` for a
    first-gold step not yet taken by a run with gold."""
    v = values.get(signal)
    if v is None:
        return math.inf if signal in _NOT_YET and has_gold else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _cell(signal: str, step: int | None, runs: list[_Run], values: list[dict[str, Any]],
          bins: int, unit: str) -> SignalCell:
    scores, failed, clusters = [], [], []
    for run, vals in zip(runs, values):
        v = _value(vals, signal, run.has_gold)
        if v is None:
            continue
        scores.append(v)
        failed.append(not run.resolved)
        clusters.append(run.cluster)
    sign = direction(signal)
    oriented = [sign * v for v in scores]
    cell = SignalCell(signal, step, len(scores), sum(failed),
                      auroc_interval(oriented, failed, clusters, unit))
    cell.bins = quantile_bins(scores, [not f for f in failed], clusters, bins, unit)
    return cell


def analyse(records: Iterable[dict[str, Any]], steps: Sequence[int] | None = None,
            bins: int = DEFAULT_BINS, unit: str = "repository",
            signals: Sequence[str] | None = None) -> OutcomeReport:
    """The report over ``records`` at each of ``steps`` (checkpoints; default
    ``default_steps``) and at the end."""
    runs, total, no_outcome, no_signals = _runs(records)
    steps = list(steps) if steps is not None else default_steps([r.last for r in runs])
    bad = [k for k in steps if not is_checkpoint(k)]
    if bad:
        raise ValueError(f"step(s) {bad} are not checkpoints; a record keeps its signals at "
                         f"{', '.join(map(str, checkpoint_steps(200)))}, ... (5·2^i and 15·2^i)")
    names = list(signals) if signals is not None else [*SIGNALS, *GOLD_SIGNALS]
    cells: dict[str, list[SignalCell]] = {n: [] for n in names}
    rows: list[StepRow] = []
    for k in [*steps, None]:
        alive = [r for r in runs if k is None or r.last >= k]
        values = [values_at(r.record, k) or {} for r in alive]
        flags = [r.resolved for r in alive]
        rows.append(StepRow(k, len(alive), flags.count(False),
                            share_interval(flags, [r.cluster for r in alive], unit)))
        for name in names:
            if k is not None and name in _CONSTANT_AT_K:
                continue
            cells[name].append(_cell(name, k, alive, values, bins, unit))
    report = OutcomeReport(total, len(runs), no_outcome, no_signals,
                           len({r.cluster for r in runs if r.cluster is not None}),
                           steps, bins, unit, rows, cells)
    report.warnings = _warnings(report, runs)
    return report


def _warnings(report: OutcomeReport, runs: list[_Run]) -> list[str]:
    """What the data as a whole cannot support (each figure also carries its own)."""
    out = []
    failed = sum(1 for r in runs if not r.resolved)
    if report.runs == 0:
        out.append("no run has both an outcome and signals: nothing to study")
        return out
    if failed < MIN_RUNS or report.runs - failed < MIN_RUNS:
        out.append(f"{failed} failed and {report.runs - failed} resolved run(s): fewer than "
                   f"{MIN_RUNS} of either, so no AUROC here supports a verdict")
    if report.unit == "repository" and level_of([r.cluster for r in runs]) == "instance":
        out.append(f"{report.repositories} repositor{'y' if report.repositories == 1 else 'ies'}"
                   ": every interval is instance-level and speaks for these repositories' "
                   "tasks only")
    elif report.unit == "repository" and report.solve_rate.reasons:
        out.extend(r for r in report.solve_rate.reasons if "repositor" in r)
    gold = sum(1 for r in runs if r.has_gold)
    if gold < report.runs:
        out.append(f"gold signals are over the {gold} run(s) measured against gold only "
                   f"({report.runs - gold} have none)")
    tested = sum(len(c) for c in report.cells.values())
    out.append(f"{tested} AUROCs: about 1 in 20 intervals misses its truth by chance, so one "
               "interval that clears 0.5 among many is weak evidence")
    return out
