"""The per-run numbers of a record, each named once: CSV and parquet columns, the CI gate
(``replay --fail-under``) and ``streameval compare`` all read a record through this table.

A metric has a short name users type (``line.coverage``, ``file.f1``, ``tokens``), the
column it is written to, the way it is read from a record (docs/metrics.md §5), and which
way is better, so a comparison can say which arm is worse. A value the record does not
have (no patch, no usage in the trace, a milestone never reached) is None, never 0.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from streameval.model import GRANULARITIES
from streameval.scoring.f1 import f1
from streameval.scoring.localisation import K_VALUES, NDCG_K

__all__ = ["FAMILIES", "IDENTITY_COLUMNS", "METRICS", "RESOLVED", "Metric", "metric_values",
           "select_metrics"]

Getter = Callable[[dict[str, Any]], Any]

#: the columns that say which run a row is, before its numbers
IDENTITY_COLUMNS: tuple[str, ...] = ("instance_id", "run_id", "trace", "agent", "model",
                                     "experiment", "labels", "repo", "gold_source")


@dataclass(frozen=True, slots=True)
class Metric:
    """One per-run number: ``name`` as typed, ``column`` as written, ``better`` is +1 when
    higher is better and -1 when lower is."""

    name: str
    column: str
    get: Getter
    better: int
    #: integral counts (steps, calls, tokens) are written as integers
    integer: bool = False
    #: what it is, for ``--help`` and the docs
    about: str = ""
    #: the group a comparison folds it in, and what its numbers count (one axis each)
    family: str = ""
    scale: str = "share"
    #: its values are 0 or 1 (a paired test of them is McNemar's)
    binary: bool = False
    #: a run that could not be scored has it too (whether it solved its task does not
    #: depend on whether its context could be scored): ``compare`` and ``replay
    #: --fail-under`` take it from error records as well, the others from scored runs
    #: only
    of_error_records: bool = False

    def value(self, record: dict[str, Any]) -> float | None:
        """The number, or None when the record does not have it (NaN and infinities,
        which some writers put in JSON, are not numbers either)."""
        try:
            v = self.get(record)
        except (KeyError, TypeError, AttributeError):
            return None
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        v = float(v)
        return v if math.isfinite(v) else None


def _final(g: str, key: str) -> Getter:
    return lambda r: r["final"][g][key]


def _final_f1(g: str) -> Getter:
    def get(r: dict[str, Any]) -> float:
        block = r["final"][g]
        # a record written before F1 was recorded: the same rule from its two numbers
        return block["f1"] if "f1" in block else f1(block["coverage"], block["precision"])
    return get


def _traj(key: str, g: str) -> Getter:
    return lambda r: r["trajectory"][key][g]


def _loc(key: str, k: int | None = None) -> Getter:
    return (lambda r: r["localisation"][key]) if k is None else (
        lambda r: r["localisation"][key][str(k)])


def _signal(name: str) -> Getter:
    return lambda r: r["signals"][name]


def _tokens(r: dict[str, Any]) -> int | None:
    t = r.get("tokens")
    if not isinstance(t, dict):
        return None
    total = sum(int(v) for v in t.values() if isinstance(v, int))
    # a trace with no usage at all reports zeros; with no cost either, 0 is "not stated"
    return total if total or r.get("cost_usd") is not None else None


def _resolved(r: dict[str, Any]) -> int | None:
    """1 solved, 0 not, None unknown: outcomes are booleans (or null) in a record (and
    absent from records written before outcomes were joined)."""
    v = r.get("resolved")
    return int(v) if isinstance(v, bool) else None


#: the families a comparison folds its metrics into, in their order
FAMILIES = ("outcome", "final", "trajectory", "editloc", "effort", "to gold", "ranking",
            "signals")


def _metrics() -> tuple[Metric, ...]:
    out: list[Metric] = []
    for g in GRANULARITIES:
        out += [
            Metric(f"{g}.coverage", f"contextbench_final_{g}_coverage", _final(g, "coverage"), 1,
                   about=f"final {g} coverage", family="final"),
            Metric(f"{g}.precision", f"contextbench_final_{g}_precision",
                   _final(g, "precision"), 1, about=f"final {g} precision", family="final"),
            Metric(f"{g}.f1", f"contextbench_final_{g}_f1", _final_f1(g), 1,
                   about=f"final {g} F1", family="final"),
        ]
    out += [Metric(f"{g}.auc", f"contextbench_traj_auc_{g}", _traj("auc_coverage", g), 1,
                   about=f"{g} AUC-coverage", family="trajectory") for g in GRANULARITIES]
    out += [Metric(f"{g}.redundancy", f"contextbench_traj_redundancy_{g}",
                   _traj("redundancy", g), -1, about=f"{g} redundancy", family="trajectory")
            for g in GRANULARITIES]
    out += [
        Metric("editloc.recall", "contextbench_editloc_recall", lambda r: r["editloc"]["recall"],
               1, about="EditLoc recall (runs with a patch)", family="editloc"),
        Metric("editloc.precision", "contextbench_editloc_precision",
               lambda r: r["editloc"]["precision"], 1, about="EditLoc precision",
               family="editloc"),
        Metric("steps", "steps", lambda r: r["num_steps"], -1, integer=True,
               about="retrieval steps", family="effort", scale="steps"),
        Metric("tool_calls", "tool_calls", lambda r: r["tool_calls"], -1, integer=True,
               about="tool calls", family="effort", scale="steps"),
        Metric("tokens", "tokens", _tokens, -1, integer=True,
               about="tokens, all four kinds, where the trace states them", family="effort",
               scale="tokens"),
        Metric("cost_usd", "cost_usd", lambda r: r["cost_usd"], -1,
               about="cost in US dollars, where the trace states it", family="effort",
               scale="usd"),
        Metric("first_gold_file_step", "first_gold_file_step",
               lambda r: r["first_gold_file_step"], -1, integer=True,
               about="steps to the first gold file read", family="to gold", scale="steps"),
        Metric("first_gold_file_seconds", "first_gold_file_seconds",
               lambda r: r["first_gold_file_seconds"], -1,
               about="trace seconds to the first gold file read", family="to gold",
               scale="seconds"),
        Metric("first_gold_file_tokens", "first_gold_file_tokens",
               _loc("first_gold_file_tokens"), -1, integer=True,
               about="tokens to the first gold file read", family="to gold", scale="tokens"),
        Metric("first_gold_line_step", "first_gold_line_step",
               lambda r: r["first_gold_line_step"], -1, integer=True,
               about="steps to the first gold line read", family="to gold", scale="steps"),
    ]
    out += [Metric(f"file.recall@{k}", f"file_recall_at_{k}", _loc("recall_at", k), 1,
                   about=f"gold files among the first {k} read", family="ranking")
            for k in K_VALUES]
    out += [Metric(f"file.precision@{k}", f"file_precision_at_{k}", _loc("precision_at", k), 1,
                   about=f"share of the first {k} files read that are gold", family="ranking")
            for k in K_VALUES]
    out += [
        Metric("file.mrr", "file_mrr", _loc("mrr"), 1, about="1 / rank of the first gold file",
               family="ranking"),
        Metric(f"file.ndcg@{NDCG_K}", f"file_ndcg_at_{NDCG_K}", _loc(f"ndcg_at_{NDCG_K}"), 1,
               about=f"nDCG@{NDCG_K} of the files read", family="ranking"),
        Metric("full_file_coverage_step", "full_file_coverage_step",
               _loc("full_file_coverage_step"), -1, integer=True,
               about="steps to full file coverage", family="to gold", scale="steps"),
        Metric("full_file_coverage_seconds", "full_file_coverage_seconds",
               _loc("full_file_coverage_seconds"), -1,
               about="trace seconds to full file coverage", family="to gold", scale="seconds"),
        Metric("full_file_coverage_tokens", "full_file_coverage_tokens",
               _loc("full_file_coverage_tokens"), -1, integer=True,
               about="tokens to full file coverage", family="to gold", scale="tokens"),
        Metric("resolved", "resolved", _resolved, 1, integer=True, binary=True,
               about="solved by the benchmark's tests (1) or not (0), where the record's "
                     "outcome is known (error records too): averaged, the solve rate",
               family="outcome", of_error_records=True),
    ]
    # the gold-free signals (docs/outcomes.md §2) the record's other fields do not hold
    out += [Metric(name, name, _signal(name), better, integer=integer, about=about,
                   family="signals", scale="count" if integer else "share")
            for name, better, integer, about in (
                ("files_read", -1, True, "distinct files whose lines a step showed"),
                ("reread_share", -1, False, "share of the lines shown that were seen before"),
                ("redundancy", -1, False, "share of the files steps read that were read before"),
                ("repeated_calls", -1, True, "tool calls identical to an earlier one"),
                ("max_repeats", -1, True, "times the most repeated tool call was made"),
                ("steps_since_new_file", -1, True, "steps since a file was first read"),
                ("test_runs", 1, True, "tool calls that ran tests"),
                ("edits", -1, True, "edits of repository files"))]
    return tuple(out)


#: every per-run number, in column order
METRICS: tuple[Metric, ...] = _metrics()
#: whether the run solved its task, 1 or 0 (``resolved``, docs/outcomes.md §1): its mean
#: over runs with an outcome is the solve rate (the fleet's, an arm's)
_BY_NAME = {m.name: m for m in METRICS}
RESOLVED = _BY_NAME["resolved"]


def metric(name: str) -> Metric:
    """The metric called ``name``; KeyError naming the known ones when there is none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(_BY_NAME)}") from None


def select_metrics(patterns: Iterable[str] | None) -> tuple[Metric, ...]:
    """The metrics whose names match any of the glob ``patterns`` (``line.*``,
    ``*.f1``), in table order; all of them for None. KeyError for a pattern that
    matches nothing (a typo must not silently shrink a comparison)."""
    if patterns is None:
        return METRICS
    chosen: set[str] = set()
    for pattern in patterns:
        hits = [m.name for m in METRICS if fnmatch.fnmatchcase(m.name, pattern)]
        if not hits:
            raise KeyError(f"no metric matches {pattern!r}; known: {', '.join(_BY_NAME)}")
        chosen.update(hits)
    return tuple(m for m in METRICS if m.name in chosen)


def metric_values(record: dict[str, Any], metrics: Iterable[Metric] = METRICS
                  ) -> dict[str, float | None]:
    """``{name: value}`` of a scored record; an error record has none."""
    if "error" in record:
        return {m.name: None for m in metrics}
    return {m.name: m.value(record) for m in metrics}
