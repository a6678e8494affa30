"""The page's data for recorded runs (``streameval view RECORDS.jsonl``).

The records are the numbers: every row and every curve is a record's. With gold and
repositories, and the traces where the records name them (``trace``, relative to the
directory replay was given: ``--traces``), each trace is scored again with a journal,
which gives what no record holds: the calls with what each was credited, and each gold
file line by line. When the trace scores differently today than its record says, the
run page says so and keeps the record's numbers.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from streameval.errors import StreamevalError, UsageError
from streameval.model import GRANULARITIES
from streameval.report.journal import RunJournal
from streameval.report.page_data import (
    CALLS_PAGE,
    LiveState,
    calls_page,
    record_curve,
    record_row,
    run_detail,
)
from streameval.report.page_fleet import FleetCache, build_all
from streameval.report.page_session import session_detail
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import Resources
from streameval.scoring.record import is_record
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.head import describe

log = logging.getLogger(__name__)

__all__ = ["RecordsPages", "read_records"]

#: run details kept after being built (scoring a trace again is the slow part)
KEEP_DETAILS = 64


def read_records(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every record of the JSONL files, in order. Lines that are no record are skipped
    with one warning per file; a file that holds lines and no record at all is refused
    (``UsageError``), saying what it holds: a trace given where records go would
    otherwise be one blank row per line."""
    out = []
    for path in paths:
        records, others, first = _records_of(path)
        if others and not records:
            raise UsageError(_not_records(path))
        if others:
            log.warning("%s: %d line(s) are not records (the first: line %d); skipped",
                        path, others, first)
        out.extend(records)
    return out


def _records_of(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """(the file's records, how many non-empty lines are not, the first of those)."""
    records: list[dict[str, Any]] = []
    others = first = 0
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                rec = None
            if is_record(rec):
                records.append(rec)
                continue
            others += 1
            first = first or n
    return records, others, first


def _not_records(path: Path) -> str:
    """Why a file of lines is no records file, and what to do with it."""
    head = read_head(path)
    try:
        fmt = detect_format(head)
    except StreamevalError:
        fmt = None
    text = (f"{path} holds no records ({f'it is a {fmt} trace' if fmt else describe(head)}). "
            "Records are what `streameval replay --out` and `watch --out` write: one JSON "
            "object per run, with its instance_id and its numbers (final) or error")
    if fmt:
        text += (f". Score the trace first: streameval replay {path} --gold GOLD --repo REPO "
                 "--out records.jsonl, then streameval view records.jsonl")
    return text


def _ids(records: list[dict[str, Any]]) -> list[str]:
    """Each record's page id: its run id (else instance id), made unique with ``#n``."""
    seen: dict[str, int] = {}
    out = []
    for rec in records:
        base = record_row(rec)["id"]
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return out


def _differs(given: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """How today's record of a trace differs from the one given, or None."""
    if "error" in given or "error" in now:
        return None if given.get("error") == now.get("error") else "error"
    if given.get("num_steps") != now.get("num_steps"):
        return f"steps {given.get('num_steps')} -> {now.get('num_steps')}"
    for g in GRANULARITIES:
        a = (given.get("final") or {}).get(g, {}).get("coverage")
        b = (now.get("final") or {}).get(g, {}).get("coverage")
        if a != b:
            return f"{g} coverage {a} -> {b}"
    return None


class RecordsPages:
    """The ``PageSource`` of a list of records."""

    def __init__(self, records: list[dict[str, Any]], res: Resources | None = None,
                 traces: Path | None = None):
        self.records = records
        self.res = res
        self.traces = traces
        self.ids = _ids(records)
        self.by_id = dict(zip(self.ids, records))
        self.cache = FleetCache()
        build_all(self.cache, ((i, 0, self._row(i)) for i in self.ids))
        self._details: OrderedDict[str, dict] = OrderedDict()
        #: one build at a time: the repositories' readers are not shared between threads
        self._lock = threading.Lock()

    def _row(self, run_id: str) -> Callable[[], dict]:
        return lambda: {**record_row(self.by_id[run_id]), "id": run_id}

    def fleet(self, since: str | None) -> dict[str, Any]:
        with self.cache.lock:
            return self.cache.answer(since)

    def run(self, run_id: str, calls_from: int) -> tuple[str, Callable[[], dict]] | None:
        if run_id not in self.by_id:
            return None
        return f'"{self.cache.nonce}.{self.ids.index(run_id)}.{calls_from}"', \
            lambda: self.detail(run_id, calls_from, CALLS_PAGE)

    def detail(self, run_id: str, calls_from: int = 0, calls_page: int | None = None) -> dict:
        """The run's page (cached); ``calls_page`` rows of calls (all with None)."""
        with self._lock:
            held = self._details.get(run_id)
            if held is None:
                held = self._build(run_id)
                self._details[run_id] = held
                while len(self._details) > KEEP_DETAILS:
                    self._details.popitem(last=False)
            self._details.move_to_end(run_id)
        if calls_page is None:
            return held
        calls = held["calls"]
        start = max(0, min(calls_from, max(len(calls["rows"]) - 1, 0)))
        return {**held, "calls": {**calls, "rows": calls["rows"][start:start + calls_page],
                                  "from": start}}

    def tried(self, rec: Mapping[str, Any]) -> list[Path]:
        """Where the record's trace is looked for, in order: its ``trace`` under
        ``--traces``, then under the current directory (none when it names none)."""
        name = rec.get("trace")
        if not isinstance(name, str) or not name:
            return []
        bases = ([self.traces] if self.traces is not None else []) + [Path.cwd()]
        return list(dict.fromkeys(base / name for base in bases))

    def _trace(self, rec: Mapping[str, Any]) -> Path | None:
        return next((path for path in self.tried(rec) if path.is_file()), None)

    def traces_missing(self) -> list[tuple[str, list[Path]]]:
        """The runs whose trace was not found (run id, the paths tried): with gold and
        repositories, their pages can show no calls and no gold strips."""
        return [(run_id, self.tried(rec)) for run_id, rec in self.by_id.items()
                if self._trace(rec) is None]

    def _why_not_shown(self, rec: Mapping[str, Any]) -> str:
        """Why a run's page shows no calls and no gold strips (``detail["unavailable"]``)."""
        if self.res is None or self.res.gold is None:
            return ("the calls and the gold strips come from scoring the trace again: give "
                    "--gold and --repos (and --traces DIR, where replay found the traces)")
        tried = self.tried(rec)
        if not tried:
            return "the record names no trace (a unified prediction): there are no calls to show"
        return (f"no trace found for it: tried {' and '.join(map(str, tried))} (the record's "
                "trace under --traces, then the current directory); --traces is the "
                "directory replay was given")

    def _build(self, run_id: str) -> dict:
        rec = self.by_id[run_id]
        row = self._row(run_id)()
        curve = record_curve(rec)
        trace = self._trace(rec)
        if self.res is None or self.res.gold is None or trace is None:
            return _unavailable(row, curve, self._why_not_shown(rec))
        found: list[tuple[Any, RunJournal]] = []

        def attach(session: Any) -> None:
            journal = RunJournal()
            session.listeners.append(journal)
            found.append((session, journal))

        try:
            now = evaluate_trace(trace, self.res, root=self.traces, on_session=attach)
        except (StreamevalError, OSError) as exc:
            return _unavailable(row, curve, f"cannot score {trace} again: {exc}")
        pick = next((i for i, (s, _j) in enumerate(found)
                     if s.identity.run_id == rec.get("run_id")), 0 if len(found) == 1 else None)
        if pick is None:
            return _unavailable(row, curve, f"{trace} holds {len(found)} runs, none named {run_id}")
        session, journal = found[pick]
        detail = session_detail(session, journal, self.res, LiveState(True, True),
                                calls_from=0, row=row)
        detail["curve"] = run_detail(row, curve, None, None, {}, {})["curve"]
        detail["calls"] = {**detail["calls"], "rows": _all_calls(journal, curve)}
        moved = _differs(rec, now[pick]) if pick < len(now) else None
        if moved is not None:
            detail["notes"].append(f"the trace scores differently today ({moved}): the numbers "
                                   "and the curve are the record's, the calls and strips today's")
        return detail


def _unavailable(row: dict, curve: list[tuple[float, ...]], why: str) -> dict:
    """A run page with the record's numbers and no calls or gold strips, and why not
    (``unavailable``, also its note: the page says it where the calls would be)."""
    return run_detail(row, curve, None, None, {}, {}, notes=[why], unavailable=why)


def _all_calls(journal: RunJournal, curve: list[tuple[float, ...]]) -> list[dict]:
    return calls_page(journal, curve, 0, len(journal.calls) or 1)["rows"]
