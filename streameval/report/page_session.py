"""The one place the page reads a scoring session: a run's detail, live or re-scored.

Everything the page shows comes from values: the ``RunSnapshot``, the ``Record`` (its
``trajectory`` is the per-step curve), the ``RunJournal``. One thing a run page needs is
in no such value, and is read here only: the patch whose lines the gold strips mark as
edited (the landed one, else the edits seen so far). The gold row and the files'
lengths come from ``Resources``, as the session got them.

Callers hold whatever lock guards the session (the watcher's table lock): a repository
is read here (file lengths), and its ``git cat-file`` is shared with the watcher.
"""

from __future__ import annotations

from typing import Any

from streameval.errors import StreamevalError
from streameval.report.goldview import edited_lines
from streameval.report.journal import RunJournal
from streameval.report.page_data import fleet_row, record_curve, run_detail
from streameval.runs.resources import Resources

__all__ = ["session_detail"]


def _file_lines(res: Resources | None, gold: Any) -> dict[str, int | None]:
    if res is None or res.repos is None or gold is None:
        return {}
    try:
        view = res.repos.view_for(gold)
    except (StreamevalError, OSError):
        return {}
    out: dict[str, int | None] = {}
    for s in gold.gold_context:
        if s.file not in out:
            try:
                out[s.file] = view.num_lines(s.file)
            except (StreamevalError, OSError):
                out[s.file] = None
    return out


def session_detail(session: Any, journal: RunJournal | None, res: Resources | None,
                   live: Any, *, calls_from: int = 0, row: dict | None = None) -> dict[str, Any]:
    """The run page's JSON for ``session`` (``page_data.run_detail``)."""
    snap = session.snapshot()
    row = row if row is not None else fleet_row(snap, live)
    notes: list[str] = []
    curve: list[tuple[float, ...]] = []
    if snap.scores is not None and snap.error is None:
        rec = session.record()   # O(steps): built when the page asks and the run moved
        curve = record_curve(rec) if "error" not in rec else curve
    gold = res.lookup(snap.instance_id) if res is not None else None
    patch = session.final_patch
    if patch is not None:
        notes.append(f"edited lines: the patch ({snap.patch_source or 'final'})")
    elif session.builder is not None and snap.edits:
        patch = session.builder.provisional_patch()
        notes.append("edited lines: the edits seen so far (no patch has landed)")
    if snap.error is not None:
        notes.append(f"not scored: {snap.error}")
    if journal is not None and journal.calls_forgotten:
        notes.append("the call list of this finished run was dropped from memory; "
                     f"streameval inspect {snap.identity.trace or 'TRACE'} shows it")
    return run_detail(row, curve, journal, gold, _file_lines(res, gold),
                      edited_lines(patch), calls_from=calls_from, notes=notes)
