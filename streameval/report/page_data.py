"""The page's JSON: a fleet row per run, and one run's detail (docs/page.md, "The API").

Built from values only: a run's ``RunSnapshot`` (live) or its ``Record`` (``view``),
its ``RunJournal``, the gold row and the patch. Live runs and recorded ones give the
same shapes, so the page, the self-contained HTML file and the tests read one API.

Numbers are sent unrounded; a ratio whose denominator is empty (nothing predicted, no
gold) is 1.0 by the rule (docs/metrics.md §3) and carries a flag, so the page can mark
it (``1.00*``) instead of showing it as a result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streameval.model import GRANULARITIES
from streameval.reading.describe import cut, describe_call
from streameval.report.goldview import gold_files
from streameval.report.journal import CallRow, RunJournal
from streameval.scoring.snapshot import RunSnapshot
from streameval.sources.gold import GoldInstance

__all__ = ["CALLS_PAGE", "MAX_CURVE", "LiveState", "fleet_row", "last_text", "record_row",
           "run_detail"]

#: call rows per answer (``calls_from`` pages through the rest)
CALLS_PAGE = 200
#: curve points per answer; a longer run is drawn at evenly spaced steps (said so)
MAX_CURVE = 4000
#: characters of the last call's input in a fleet row
LAST_TEXT = 120


@dataclass(frozen=True, slots=True)
class LiveState:
    """What only the watcher knows of a run: finished or not, its record out, the abort
    decisions taken on it (policy, action)."""

    finished: bool = False
    record_written: bool = False
    aborts: tuple[tuple[str, str], ...] = ()


def _numbers(coverage: float, precision: float, gold_size: int, pred_size: int,
             f1: float | None) -> dict[str, Any]:
    return {"coverage": coverage, "precision": precision, "f1": f1,
            "gold_empty": gold_size == 0, "pred_empty": pred_size == 0}


def fleet_row(snap: RunSnapshot, live: LiveState) -> dict[str, Any]:
    """One run of the fleet table, from its snapshot."""
    scores = snap.scores
    final = auc = redundancy = None
    scored = scores is not None and snap.error is None
    if scored:
        final, auc, redundancy = {}, {}, {}
        for g in GRANULARITIES:
            n = scores.granularities[g]
            # F1 where the scoring carries it (scoring.f1); never made up here
            final[g] = _numbers(n.coverage, n.precision, n.gold_size, n.pred_size,
                                getattr(n, "f1", None))
            auc[g] = n.auc_coverage
            redundancy[g] = n.redundancy
    return {
        "id": snap.run_id,
        "instance": snap.instance_id,
        "state": "finished" if live.finished else "running",
        "record": live.record_written,
        "agent": snap.agent,
        "model": snap.model,
        "experiment": getattr(snap.identity, "experiment", None),
        "format": snap.fmt,
        "trace": snap.identity.trace,
        # steps count toward numbers; a run not scored has none, as its record says
        "steps": snap.num_steps if scored else None,
        "calls": snap.tool_calls,
        "error": snap.error,
        "gold_missing": snap.gold_missing,
        "resolved": snap.identity.resolved,
        "final": final,
        "auc": auc,
        "redundancy": redundancy,
        # a run not scored has no EditLoc either: its record (an error record) has none
        "editloc": _editloc(snap.editloc, snap.editloc_final) if scored else None,
        "problems": sum(snap.problems.values()),
        "bad_lines": sum(snap.bad_lines.values()),
        "aborts": [list(a) for a in live.aborts],
        "tokens": snap.tokens.total,
        "cost": snap.cost_usd,
        "last": last_text(snap.last_call) if snap.last_call is not None else "",
    }


def last_text(call: Any, described: str | None = None) -> str:
    """A tool call as the fleet's last column shows it: the tool and what it asked.
    ``described``: ``describe_call(call, width)`` made already, ``width >= LAST_TEXT``."""
    text = describe_call(call, LAST_TEXT) if described is None else cut(described, LAST_TEXT)
    return f"{call.tool} {text}".strip()


def _editloc(e: Mapping[str, Any] | None, final: bool) -> dict[str, Any] | None:
    if not e:
        return None
    return {"recall": e.get("recall"), "precision": e.get("precision"),
            "intersection": e.get("intersection"), "pred_size": e.get("pred_size"),
            "gold_size": e.get("gold_size"), "final": final}


def record_row(rec: Mapping[str, Any]) -> dict[str, Any]:
    """One run of the fleet table, from its record (``view``): the same shape as a live
    row; a finished run whose record is written."""
    final = auc = redundancy = None
    error = rec.get("error")
    if error is None and isinstance(rec.get("final"), Mapping):
        final, auc, redundancy = {}, {}, {}
        traj = rec.get("trajectory") or {}
        for g in GRANULARITIES:
            b = rec["final"].get(g) or {}
            final[g] = _numbers(b.get("coverage"), b.get("precision"), b.get("gold_size", 1),
                                b.get("pred_size", 1), b.get("f1"))
            auc[g] = (traj.get("auc_coverage") or {}).get(g)
            redundancy[g] = (traj.get("redundancy") or {}).get(g)
    tokens = rec.get("tokens")
    problems = rec.get("problems")
    bad = rec.get("bad_lines")
    return {
        "id": str(rec.get("run_id") or rec.get("instance_id") or rec.get("source") or "?"),
        "instance": rec.get("instance_id"),
        "state": "finished",
        "record": True,
        "agent": rec.get("agent", "unknown"),
        "model": rec.get("model", "unknown"),
        "experiment": rec.get("experiment"),
        "format": rec.get("format"),
        "trace": rec.get("trace"),
        "steps": rec.get("num_steps"),
        "calls": rec.get("tool_calls"),
        "error": error,
        "gold_missing": rec.get("gold_missing"),
        "resolved": rec.get("resolved"),
        "final": final,
        "auc": auc,
        "redundancy": redundancy,
        "editloc": _editloc(rec.get("editloc"), True),
        "problems": sum(problems.values()) if isinstance(problems, Mapping) else 0,
        "bad_lines": sum(bad.values()) if isinstance(bad, Mapping) else 0,
        "aborts": [],
        "tokens": sum(v for v in tokens.values() if isinstance(v, int))
        if isinstance(tokens, Mapping) else None,
        "cost": rec.get("cost_usd"),
        "last": "",
    }


def record_curve(rec: Mapping[str, Any]) -> list[tuple[float, ...]]:
    """A record's per-step coverage (``trajectory.steps``), GRANULARITIES order."""
    steps = (rec.get("trajectory") or {}).get("steps") or []
    return [tuple(float(s["coverage"][g]) for g in GRANULARITIES) for s in steps]


def _curve(points: Sequence[tuple[float, ...]]) -> dict[str, Any]:
    """The curve as [step, file, symbol, span, line] rows; past ``MAX_CURVE`` steps,
    evenly spaced steps and the last one (``every`` says the spacing)."""
    n = len(points)
    every = max(1, -(-n // MAX_CURVE))
    picked = list(range(0, n, every))
    if n and picked[-1] != n - 1:
        picked.append(n - 1)
    return {"n": n, "every": every,
            "points": [[i + 1, *points[i]] for i in picked]}


def _call(row: CallRow, curve: Sequence[tuple[float, ...]]) -> dict[str, Any]:
    step = row.step
    return {
        "n": row.n, "step": step, "tool": row.tool, "category": row.category,
        "input": row.text,
        # the per-step coverage after this step: the curve's (the record's) point
        "coverage": list(curve[step - 1]) if step is not None and step <= len(curve) else None,
        "reads": [{"file": r.file, "in_repo": r.in_repo, "current": [list(w) for w in r.current],
                   "base": [list(w) for w in r.base], "agent": r.agent,
                   "unaligned": r.unaligned, "by_text": r.by_text} for r in row.reads],
        "listed": row.listed, "listed_names": list(row.listed_names),
        "edits": list(row.edits),
        "problems": [list(p) for p in row.problems],
    }


def calls_page(journal: RunJournal | None, curve: Sequence[tuple[float, ...]] = (),
               start: int = 0, size: int = CALLS_PAGE) -> dict[str, Any]:
    """``size`` call rows from the ``start``-th (0-based) and how many there are."""
    if journal is None:
        return {"rows": [], "from": 0, "kept": 0, "total": None, "forgotten": False}
    kept = len(journal.calls)
    start = max(0, min(start, max(kept - 1, 0)))
    return {"rows": [_call(r, curve) for r in journal.calls[start:start + size]], "from": start,
            "kept": kept, "total": journal.n, "forgotten": journal.calls_forgotten}


def run_detail(row: dict[str, Any], curve: Sequence[tuple[float, ...]],
               journal: RunJournal | None, gold: GoldInstance | None,
               file_lines: Mapping[str, int | None],
               edited: Mapping[str, list[tuple[int, int]]], *, calls_from: int = 0,
               notes: Sequence[str] = (), unavailable: str | None = None) -> dict[str, Any]:
    """One run's page: its fleet row, its curve, its gold files, its calls, and
    ``unavailable``: why there are no calls and no gold files to show, when that is
    not because the run has none (a recorded run whose trace was not found)."""
    return {
        "run": row,
        "curve": _curve(curve),
        "gold": gold_files(gold, journal, file_lines, edited) if gold is not None else None,
        "calls": calls_page(journal, curve, calls_from),
        "notes": list(notes),
        "unavailable": unavailable,
    }
