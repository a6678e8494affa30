"""Aggregates over per-instance records: the summary table and the Benchkit CSV.

Pure functions over docs/metrics.md §5 records (dicts as replay writes them), so the
numbers of a table can be recomputed from the JSONL alone. Two averages are reported
and always labelled (docs/metrics.md §4, "Aggregates"):

- **macro**: the mean of per-instance values, every instance counts once (the usual
  ContextBench table);
- **micro**: intersections and sizes summed over instances first, then divided, so
  large instances weigh more.

Error records (``{"instance_id", "error"}``) are counted, never averaged in; so are runs
measured against no gold (``gold_missing``: ``no_gold``, ``no_repo``, docs/metrics.md
§5b), whose gold metrics are null. Each row says how many runs it averaged and how many
of those carry a run-level flag (``nothing_read``, ``mostly_outside_repo``, and the loud
``no_end_event`` and ``repo_mismatch``: docs/metrics.md §5b), and a precision that
averages in runs which predicted nothing there (1.0 by convention, §3) is marked ``*``.
Where runs carry their outcome (``resolved``), the solve rate is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streameval.errors import GOLD_MISSING, LOUD_FLAGS, RUN_FLAGS, Reason
from streameval.model import GRANULARITIES
from streameval.report.columns import BENCHKIT_COLUMNS, COLUMNS, cell, record_row, write_csv
from streameval.scoring.f1 import f1
from streameval.scoring.sums import left_mean

__all__ = ["BENCHKIT_COLUMNS", "COLUMNS", "aggregate", "benchkit_row", "format_table",
           "loud_flags", "loud_reason", "write_benchkit_csv"]

_REASONS = frozenset(r.value for r in Reason)
#: the flags of a run measured against gold (the gold-free ones are counted apart)
_MEASURED_FLAGS = RUN_FLAGS - GOLD_MISSING


def _ratio(num: int, den: int, empty: float) -> float:
    return num / den if den else empty


def _flags(record: dict[str, Any]) -> list[str]:
    """The run-level flags a scored record carries (docs/metrics.md §5b)."""
    problems = record.get("problems")
    return sorted(k for k in problems if k in _MEASURED_FLAGS) if isinstance(problems, dict) \
        else []


def loud_flags(record: dict[str, Any]) -> list[str]:
    """The loud flags a scored record carries: its numbers may be wrong (§5b)."""
    return [f for f in _flags(record) if f in LOUD_FLAGS]


def loud_reason(record: dict[str, Any]) -> str:
    """What a loudly flagged run's flag means, in one clause naming the run."""
    run = record.get("run_id") or record.get("instance_id")
    check = record.get("repo_mismatch")
    if isinstance(check, dict) and Reason.REPO_MISMATCH.value in loud_flags(record):
        bad, checked = check.get("reads_mismatching", 0), check.get("reads_checked", 0)
        return (f"run {run}: {bad} of {checked} reads did not find their text where they say "
                "it is in the repository given: is it the repository at the run's base commit?")
    return (f"run {run}: the trace ends without the end event its format always writes last "
            "(cut short, or its agent killed or still at work)")


def _counted(runs: list[dict[str, Any]]) -> dict[str, int]:
    """How many runs a row averaged, and how many of them are flagged."""
    return {"runs": len(runs), "flagged": sum(bool(_flags(r)) for r in runs)}


def _final(evaluated: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for g in GRANULARITIES:
        runs = [r for r in evaluated if g in (r.get("final") or {})]
        rows = [r["final"][g] for r in runs]
        inter = sum(int(x.get("intersection", 0)) for x in rows)
        gold = sum(int(x.get("gold_size", 0)) for x in rows)
        pred = sum(int(x.get("pred_size", 0)) for x in rows)
        micro_cov, micro_prec = _ratio(inter, gold, 1.0), _ratio(inter, pred, 1.0)
        out[g] = {
            # macro F1 is the mean of the runs' F1, not the F1 of the mean coverage and
            # precision; micro F1 is the F1 of the micro coverage and precision
            "macro": {"coverage": left_mean([x["coverage"] for x in rows]),
                      "precision": left_mean([x["precision"] for x in rows]),
                      "f1": left_mean([_record_f1(x) for x in rows])},
            # Empty G gives coverage 1.0 and empty P precision 1.0 (docs/metrics.md §3),
            # summed sizes follow the same convention.
            "micro": ({"coverage": micro_cov, "precision": micro_prec,
                       "f1": f1(micro_cov, micro_prec)} if rows else
                      {"coverage": None, "precision": None, "f1": None}),
            "intersection": inter, "gold_size": gold, "pred_size": pred,
            # what the row averaged: its runs, those flagged, and those whose precision
            # is the 1.0 of an empty prediction
            **_counted(runs),
            "nothing_predicted": sum(int(x.get("pred_size", 0)) == 0 for x in rows),
        }
    return out


def _record_f1(block: dict[str, Any]) -> float:
    """A final block's F1: the record's own, else (a record written before F1 was
    recorded) from its coverage and precision by the same rule."""
    value = block.get("f1")
    return float(value) if value is not None else f1(block["coverage"], block["precision"])


def _trajectory(evaluated: list[dict[str, Any]], key: str) -> dict[str, float | None]:
    return {g: left_mean([r["trajectory"][key][g] for r in evaluated
                      if g in (r.get("trajectory") or {}).get(key, {})])
            for g in GRANULARITIES}


def _editloc(evaluated: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the instances that have a patch only (no patch, no EditLoc: docs/metrics.md §4).

    Per instance recall = precision = hits / deleted lines, so the micro form of both
    is Σ hits / Σ deleted lines (0 when nothing was deleted); not the public
    evaluator's Σ hits / Σ gold size, which docs/metrics.md §4b says to ignore.
    """
    patched = [r for r in evaluated if isinstance(r.get("editloc"), dict)]
    rows = [r["editloc"] for r in patched]
    hits = sum(int(x.get("intersection", 0)) for x in rows)
    deleted = sum(int(x.get("pred_size", 0)) for x in rows)
    micro = _ratio(hits, deleted, 0.0) if rows else None
    return {"instances": len(rows), "flagged": _counted(patched)["flagged"],
            "macro": {"recall": left_mean([x["recall"] for x in rows]),
                      "precision": left_mean([x["precision"] for x in rows])},
            "micro": {"recall": micro, "precision": micro},
            "intersection": hits, "pred_size": deleted}


def _reason(record: dict[str, Any], key: str = "error") -> str:
    """The Reason value an error record (or ``gold_missing``) starts with
    (``"bad_gold: ..."``)."""
    head = str(record.get("reason") or record[key]).split(":", 1)[0].strip()
    return head if head in _REASONS else "other"


def _outcomes(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs whose outcome is known, and how many of them solved their task."""
    known = [r["resolved"] for r in records if isinstance(r.get("resolved"), bool)]
    return {"known": len(known), "resolved": sum(known),
            "solve_rate": sum(known) / len(known) if known else None}


def aggregate(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Macro and micro averages of a batch of records, plus counts of errors by reason,
    of runs measured against no gold by why, and of outcomes."""
    records = list(records)
    evaluated = [r for r in records if "error" not in r]
    errors = [r for r in records if "error" in r]
    reasons = Counter(_reason(r) for r in errors)
    without = Counter(_reason(r, "gold_missing") for r in evaluated if r.get("gold_missing"))
    flags = Counter(f for r in evaluated for f in _flags(r))
    return {
        "instances": len(records),
        "evaluated": len(evaluated),
        "errors": len(errors),
        "errors_by_reason": dict(sorted(reasons.items())),
        "without_gold": sum(without.values()),
        "without_gold_by_reason": dict(sorted(without.items())),
        "outcomes": _outcomes(records),
        "flagged": sum(bool(_flags(r)) for r in evaluated),
        "flags_by_reason": dict(sorted(flags.items())),
        "final": _final(evaluated),
        "auc_coverage": _trajectory(evaluated, "auc_coverage"),
        "trajectory_runs": _counted([r for r in evaluated if "trajectory" in r]),
        "redundancy": _trajectory(evaluated, "redundancy"),
        "editloc": _editloc(evaluated),
    }


# --------------------------------------------------------------------------- table


def _f(value: float | None, marked: bool = False) -> str:
    if value is None:
        return f"{'-':>8}"
    return f"{value:7.3f}*" if marked else f"{value:8.3f}"


#: the footnote of a marked precision
EMPTY_PREDICTION_NOTE = ("* includes runs that predicted nothing there: precision 1.0 by "
                         "convention (docs/metrics.md §3), not a good score")


def format_table(agg: dict[str, Any]) -> str:
    """A plain-text table of ``aggregate``'s result; every average says macro or micro."""
    lines = [f"instances: {agg['instances']}  evaluated: {agg['evaluated']}  "
             f"errors: {agg['errors']}"]
    if agg["errors_by_reason"]:
        lines.append("errors by reason: " + ", ".join(
            f"{k} {v}" for k, v in agg["errors_by_reason"].items()))
    if agg.get("without_gold"):
        lines.append(f"measured against no gold: {agg['without_gold']} of {agg['evaluated']} ("
                     + ", ".join(f"{k} {v}" for k, v in agg["without_gold_by_reason"].items())
                     + "): gold-free signals only, gold metrics null")
    out = agg.get("outcomes") or {}
    if out.get("known"):
        lines.append(f"outcomes: {out['known']} of {agg['instances']} known, {out['resolved']} "
                     f"resolved (solve rate {out['solve_rate']:.3f})")
    if agg.get("flagged"):
        lines.append(f"flagged runs: {agg['flagged']} of {agg['evaluated']} (" + ", ".join(
            f"{k} {v}" for k, v in agg["flags_by_reason"].items()) + ")")
    lines += ["",
              f"{'final context':<14}{'coverage':>16}{'precision':>18}{'F1':>18}{'runs':>8}",
              f"{'':<14}{'macro':>8}{'micro':>8}  {'macro':>8}{'micro':>8}  {'macro':>8}{'micro':>8}"
              f"{'(flagged)':>12}"]
    marked = False
    for g in GRANULARITIES:
        row = agg["final"][g]
        some, every = row.get("nothing_predicted", 0) > 0, row.get("pred_size", 1) == 0
        marked = marked or some
        lines.append(f"{g:<14}{_f(row['macro']['coverage'])}{_f(row['micro']['coverage'])}  "
                     f"{_f(row['macro']['precision'], some)}{_f(row['micro']['precision'], every)}  "
                     f"{_f(row['macro']['f1'])}{_f(row['micro']['f1'])}{_runs(row)}")
    if marked:
        lines.append(EMPTY_PREDICTION_NOTE)
    runs = _runs(agg.get("trajectory_runs", {}))
    lines += ["",
              f"{'trajectory':<14}{'AUC-coverage':>16}{'redundancy':>18}{'runs' if runs else '':>8}",
              f"{'':<14}{'macro':>16}{'macro':>18}{'(flagged)' if runs else '':>12}"]
    for g in GRANULARITIES:
        lines.append(f"{g:<14}{'':>8}{_f(agg['auc_coverage'][g])}  {'':>8}"
                     f"{_f(agg['redundancy'][g])}{runs}")
    e = agg["editloc"]
    lines += ["",
              f"EditLoc over {e['instances']} instance(s) with a patch"
              + (f" ({e['flagged']} flagged)" if "flagged" in e else ""),
              f"{'':<14}{'recall':>8}{'precision':>10}",
              f"{'macro':<14}{_f(e['macro']['recall'])}  {_f(e['macro']['precision'])}",
              f"{'micro':<14}{_f(e['micro']['recall'])}  {_f(e['micro']['precision'])}"]
    return "\n".join(lines) + "\n"


def _runs(row: dict[str, Any]) -> str:
    """A row's run count, its flagged runs beside it: ``3 (1)``."""
    if "runs" not in row:
        return ""
    return f"{row['runs']:>8} ({row['flagged']})"


# --------------------------------------------------------------------------- CSV


def benchkit_row(record: dict[str, Any]) -> dict[str, str]:
    """One record as CSV cells (``report.columns``): Benchkit's columns, then the rest;
    an error leaves every number empty."""
    return {c: cell(v) for c, v in record_row(record).items()}


def write_benchkit_csv(records: Iterable[dict[str, Any]], path: str | Path) -> None:
    """The CSV of ``--csv`` (docs/replay.md): one row per record, input order."""
    write_csv(records, path)
