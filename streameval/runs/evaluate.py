"""Trace files: lines -> adapter events -> the runs they hold, and the engine around them.

``TraceReader`` feeds one file's lines to its adapter and routes the events to one
``RunSession`` per run (a file may hold several, e.g. OpenHands ``output.jsonl``).
``Resources`` are what every session of a process shares (gold, repositories, the
symbol and base-text caches); ``make_session`` looks a run's gold and repository up;
``evaluate_trace`` scores a whole recorded file. ``streameval replay`` and ``streameval
watch`` both go through these, which is why a watched trace's final record is
byte-for-byte the replayed one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streameval.errors import Reason, RepoError, StreamevalError
from streameval.model import BadLine, RunIdentity, RunInfo, TraceEvent
from streameval.scoring.session import RunSession

log = logging.getLogger(__name__)

HEAD_LINES = 8  # non-empty lines read to detect a trace's format



#: makes the session of a new run from the event that started it (a RunInfo naming its
#: instance and session, or None): ``(trace_instance, session_id) -> RunSession``
SessionFactory = Callable[[str | None, str | None], RunSession]


class TraceReader:
    """One trace file: lines -> adapter events -> one RunSession per run in the file.

    A new session starts when the trace names a *different* instance id than the
    current session's (OpenHands ``output.jsonl`` holds one instance per line);
    a second ``init`` of the same run (Claude's auto-continue) stays in one session.
    """

    def __init__(self, adapter, factory: SessionFactory,
                 on_bad: Callable[[BadLine], None] | None = None):
        self.adapter = adapter
        self.factory = factory
        self.on_bad = on_bad  # process-wide counting (live exporter)
        self.sessions: list[RunSession] = []
        self.lines = 0

    @property
    def current(self) -> RunSession | None:
        return self.sessions[-1] if self.sessions else None

    def _session_for(self, event: TraceEvent) -> RunSession:
        cur = self.current
        if isinstance(event, RunInfo) and (event.instance_id or cur is None):
            seen = cur.trace_info.instance_id if cur is not None else None
            if cur is None or (seen and event.instance_id and seen != event.instance_id):
                cur = self.factory(event.instance_id, event.session_id)
                self.sessions.append(cur)
        if cur is None:
            cur = self.factory(None, None)
            self.sessions.append(cur)
        return cur

    def dispatch(self, events: Iterable[TraceEvent]) -> None:
        for ev in events:
            self._session_for(ev).handle(ev)
            if self.on_bad is not None and isinstance(ev, BadLine):
                self.on_bad(ev)

    def feed_line(self, line: bytes | None, lineno: int) -> None:
        """One line; None for a line too long to hold (``iter_lines``, the watcher's
        tail), which is a bad line of the current run."""
        self.lines += 1
        if line is None:
            self.dispatch([BadLine(lineno, Reason.LINE_TOO_LONG.value,
                                   "line longer than the limit, skipped")])
            return
        try:
            events = self.adapter.feed(line, lineno)
        except Exception as exc:  # an adapter bug must not stop the stream
            log.exception("adapter %s failed on line %d", type(self.adapter).__name__, lineno)
            events = [BadLine(lineno, Reason.MALFORMED_JSON.value, f"adapter error: {exc!r}")]
        self.dispatch(events)

    def close(self) -> list[RunSession]:
        try:
            events = self.adapter.close()
        except Exception as exc:
            log.exception("adapter %s failed at close", type(self.adapter).__name__)
            events = [BadLine(self.lines, Reason.MALFORMED_JSON.value, f"adapter error: {exc!r}")]
        self.dispatch(events)
        if not self.sessions:  # an empty trace is still a run: coverage 0
            self.sessions.append(self.factory(None, None))
        return self.sessions


def read_head(path: Path, n: int = HEAD_LINES, limit: int = 4 << 20) -> list[bytes]:
    """The first ``n`` non-empty lines, for format detection.

    Lines are read whole (a one-line OpenHands instance or compact document can be
    megabytes, and detection parses the line), and reading stops once ``limit``
    bytes are behind, so a file of blank lines is not read to its end.
    """
    head: list[bytes] = []
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                head.append(line.rstrip(b"\r\n"))
            if len(head) >= n or fh.tell() > limit:
                break
    return head


def record_line(record: dict) -> bytes:
    """The exact bytes a record is written as, by replay and the watcher alike; a
    number no JSON can hold is clamped (``sane.jsonable``), never an exception."""
    import orjson

    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:   # an integer beyond 64 bits that slipped past the value rules
        from streameval.sane import jsonable

        return orjson.dumps(jsonable(record)) + b"\n"


def iter_lines(path: Path, max_bytes: int = 1 << 22) -> Iterable[tuple[bytes | None, int]]:
    """Whole lines of a file with 1-based numbers, a last line without newline included;
    a line longer than the watcher's limit comes as ``(None, lineno)`` (skipped without
    being held in memory). Split by the watcher's own ``FileTail``, so replay and
    watch see the same lines, and linear however long a line is."""
    from streameval.traces.tail import FileTail

    tail = FileTail(path, watch_rewrites=False)
    while True:
        batch = tail.poll(final=True, max_bytes=max_bytes)
        if batch.status == "missing":
            raise FileNotFoundError(f"{path}: cannot be read")
        yield from batch.ordered()
        if not batch.more:
            return


# ---------------------------------------------------------------------- one-call API


@dataclass(slots=True)
class Resources:
    """Gold, repos, the symbol index and base texts shared by every session of a process."""

    gold: Any  # gold.GoldSet
    repos: Any  # repocache.RepoCache
    symbols: Any = None  # symbols.SymbolIndex
    texts: Any = None  # reading.basetext.BaseTexts
    tools: Any = None  # reading.toolmap.ToolMap (--tool-map)

    def lookup(self, instance_id: str | None):
        return self.gold.get(instance_id) if (self.gold is not None and instance_id) else None


def load_resources(gold: str | None, repos: str | None, repo: str | None,
                   tool_map: str | None = None, grammars: str | None = None) -> Resources:
    """Gold, repositories (``--repos``/``--repo``), a symbol index with its grammars
    (``--grammars``, default ``symbols.default_grammars``) and the tool map
    (``--tool-map``), as every command loads them. No gold (``inspect``) is None."""
    from streameval.errors import UsageError
    from streameval.reading.toolmap import load_tool_map
    from streameval.sources.basetext import BaseTexts
    from streameval.sources.gold import load_gold
    from streameval.sources.repocache import RepoCache
    from streameval.sources.symbols import SymbolIndex, check_grammars

    try:
        grammars = check_grammars(grammars)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for option, folder in (("--repos", repos), ("--repo", repo)):
        if folder is not None and not Path(folder).is_dir():
            raise UsageError(f"{option} {folder}: no such directory")
    tools = load_tool_map(tool_map) if tool_map else None
    return Resources(load_gold(gold) if gold else None,
                     RepoCache(repos, repo),
                     SymbolIndex(grammars=grammars), BaseTexts(), tools)


def run_identity(base: RunIdentity, trace_instance: str | None, index: int,
                 res: Resources, explicit: bool = False,
                 trace: Path | None = None, session_id: str | None = None) -> RunIdentity:
    """The identity of the ``index``-th run found in one trace file.

    The file's own identity (meta.json, ``--instance``, directory name) names its first
    run, except when that names no gold row, was not given explicitly, and the trace
    says which instance it ran (or, failing that, the file name carries a gold id).
    The first run's id is the trace's session id (Claude Code, Codex) unless meta.json
    names it. Later runs of the same file (OpenHands holds one instance per line) are
    the trace's own instances, their run ids suffixed.
    """
    if index == 0 and session_id and not base.run_id_given:
        base = replace(base, run_id=session_id)
    if not trace_instance:
        if explicit or index > 0 or trace is None or res.lookup(base.instance_id) is not None:
            return base
        from streameval.traces.identity import instance_candidates

        # last resort: an id in the file name (``<agent>__<owner>__<repo>-<n>.traj``)
        named = next((c for c in instance_candidates(trace) if res.lookup(c) is not None), None)
        return replace(base, instance_id=named) if named else base
    if index > 0:
        return replace(base, instance_id=trace_instance,
                       run_id=f"{base.run_id}/{trace_instance}")
    if not explicit and res.lookup(base.instance_id) is None:
        return replace(base, instance_id=trace_instance)
    return base


def make_session(res: Resources, identity: RunIdentity, fmt: str, **kw) -> RunSession:
    """A session with its gold and repo looked up; failures become an error record."""
    kw.setdefault("tools", res.tools)
    gold = res.lookup(identity.instance_id)
    if gold is None:
        bad = res.gold.error_for(identity.instance_id) if res.gold is not None else None
        if bad:
            return RunSession(identity, fmt=fmt, error=f"{Reason.BAD_GOLD.value}: {bad}", **kw)
        hint = ("check the instance id or pass the right --gold" if fmt == "unified" else
                "give the trace a meta.json with instance_id, or pass --instance, or check --gold")
        return RunSession(identity, fmt=fmt, error=(
            f"{Reason.MISSING_GOLD.value}: no gold row for instance "
            f"{identity.instance_id!r}; {hint}"), **kw)
    try:
        view = res.repos.view_for(gold)
    except (RepoError, StreamevalError) as exc:
        return RunSession(identity, gold, fmt=fmt, error=f"{exc.reason.value}: {exc}", **kw)
    return RunSession(identity, gold, view, res.symbols, fmt=fmt, texts=res.texts, **kw)


def open_adapter(path: Path, fmt: str | None = None):
    """(format name, adapter instance) for a trace file; raises TraceFormatError."""
    from streameval.traces.formats import adapter_class, detect_format

    name = fmt or detect_format(read_head(path))
    return name, adapter_class(name)()


def error_record(identity: RunIdentity, error: str) -> dict:
    """The record of a run that cannot be scored (docs/metrics.md §5)."""
    rec = {"instance_id": identity.instance_id, "error": error, "run_id": identity.run_id}
    if identity.trace is not None:
        rec["trace"] = identity.trace
    return rec


def evaluate_trace(path: str | Path, res: Resources, *, fmt: str | None = None,
                   instance: str | None = None, patch: str | None = None,
                   root: Path | None = None) -> list[dict]:
    """Score one recorded trace file; one record per run it holds. ``root`` is the
    directory the trace was found under (its records name the trace relative to it).

    The patch comes, in order, from ``patch`` (e.g. a predictions file), a
    ``patch.diff``/``model.patch`` beside the trace, or the trace's own final event.
    """
    from streameval.traces.identity import identify, patch_beside

    path = Path(path)
    identity = identify(path, instance, root=root)
    try:
        name, adapter = open_adapter(path, fmt)
    except StreamevalError as exc:
        return [error_record(identity, f"{exc.reason.value}: {exc}")]
    side_patch = patch if patch is not None else patch_beside(path)

    def factory(trace_instance: str | None, session_id: str | None) -> RunSession:
        ident = run_identity(identity, trace_instance, len(reader.sessions), res,
                             explicit=instance is not None, trace=path, session_id=session_id)
        return make_session(res, ident, name)

    reader = TraceReader(adapter, factory)
    for line, lineno in iter_lines(path):
        reader.feed_line(line, lineno)
    sessions = reader.close()
    land_file_patch(sessions, side_patch)
    return [s.record() for s in sessions]


def land_file_patch(sessions: list[RunSession], patch: str | None) -> None:
    """A patch stored beside a trace is its run's only when the file holds one run:
    never one of the many runs of an OpenHands ``output.jsonl``."""
    if patch and len(sessions) == 1:
        sessions[0].set_patch(patch, "file")



__all__ = ["HEAD_LINES", "Resources", "SessionFactory", "TraceReader", "error_record",
           "evaluate_trace",
           "iter_lines", "land_file_patch", "load_resources", "make_session", "open_adapter",
           "read_head", "record_line", "run_identity"]
