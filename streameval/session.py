"""One engine for every way a run is scored: trace events -> steps -> metrics.

``RunSession`` turns the events of one agent run into Steps (through
``traces.steps.StepBuilder``) and feeds them to ``state.InstanceState``, keeping the
live extras of METRICS.md section 7 beside. ``TraceReader`` turns one trace file's
lines into events and routes them to sessions (a file may hold several runs, e.g.
OpenHands ``output.jsonl``). ``streameval replay`` and ``streameval watch`` both go
through these two classes, which is why a watched trace's final record is
byte-for-byte the replayed one.

The record carries only what the trace itself says (trace timestamps, never the
time lines arrived), so it does not depend on how fast the file was read.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import Reason, RepoError, StreamevalError
from .intervals import IntervalSet
from .model import (
    GRANULARITIES,
    BadLine,
    RunEnd,
    RunIdentity,
    RunInfo,
    StatedContext,
    Step,
    TokenUsage,
    ToolCall,
    TraceEvent,
    Usage,
)

log = logging.getLogger(__name__)

HEAD_LINES = 8  # non-empty lines read to detect a trace's format


@dataclass(slots=True)
class RunExtras:
    """Live extras of one run (METRICS.md section 7); all from the trace itself."""

    tool_calls: int = 0
    sidechain_calls: int = 0
    categories: Counter = field(default_factory=Counter)
    context_file_reads: Counter = field(default_factory=Counter)
    bad_lines: Counter = field(default_factory=Counter)
    problems: Counter = field(default_factory=Counter)
    edits: int = 0
    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    first_gold_file_step: int | None = None
    first_gold_line_step: int | None = None
    first_gold_file_seconds: float | None = None
    first_gold_line_seconds: float | None = None
    started_at: float | None = None
    last_event_at: float | None = None


class _Tokens:
    """Sums per-message usage, but lets a run total (``cumulative``) take over."""

    def __init__(self) -> None:
        self.incremental = TokenUsage()
        self.cumulative: TokenUsage | None = None
        self.cost_incremental = 0.0
        self.cost_cumulative: float | None = None
        self.any_cost = False

    def add(self, usage: Usage) -> None:
        t = usage.tokens
        if usage.cumulative:
            self.cumulative = TokenUsage(t.input_tokens, t.output_tokens,
                                         t.cache_read_tokens, t.cache_creation_tokens)
            if usage.cost_usd is not None:
                self.cost_cumulative = float(usage.cost_usd)
                self.any_cost = True
            return
        inc = self.incremental
        inc.input_tokens += t.input_tokens
        inc.output_tokens += t.output_tokens
        inc.cache_read_tokens += t.cache_read_tokens
        inc.cache_creation_tokens += t.cache_creation_tokens
        if usage.cost_usd is not None:
            self.cost_incremental += float(usage.cost_usd)
            self.any_cost = True

    def totals(self) -> tuple[TokenUsage, float | None]:
        tokens = self.cumulative if self.cumulative is not None else self.incremental
        if not self.any_cost:
            return tokens, None
        cost = self.cost_cumulative if self.cost_cumulative is not None else self.cost_incremental
        return tokens, cost


class RunSession:
    """Everything known about one run, updated one event at a time.

    ``gold``/``view`` may be None (``inspect`` without gold, or a run whose gold or
    repo is missing): steps are still built where possible, and ``record()`` then
    returns an error record with ``error`` set to the actionable reason.
    """

    def __init__(self, identity: RunIdentity, gold=None, view=None, symbols=None, *,
                 fmt: str = "", include_sidechain: bool = False, error: str | None = None):
        from .reading.steps import StepBuilder

        self.identity = identity
        self.gold = gold
        self.view = view
        self.fmt = fmt
        self.include_sidechain = include_sidechain
        self.error = error
        self.builder = StepBuilder(view)
        self.state = None
        if gold is not None and view is not None and error is None:
            from .state import InstanceState

            self.state = InstanceState(gold, view, symbols)
        self.extras = RunExtras()
        self._tokens = _Tokens()
        self._gold_files, self._gold_lines = _gold_sets(gold)
        self.trace_info = RunInfo()
        self.last_call: ToolCall | None = None
        self.ended = False
        self.end_reason: str | None = None
        self.trace_patch: str | None = None
        self.patch: str | None = None
        self.patch_source: str | None = None
        self._steps = 0
        self._resolved: dict[str, str | None] = {}  # stated path -> repo path
        self._provisional_cache: tuple[int, dict | None] | None = None
        self._final_editloc: tuple[str, dict | None] | None = None
        #: bumped by every event and landed patch: a record built at one version is
        #: the record until the version moves (the watcher rebuilds nothing unchanged)
        self.version = 0
        #: observers called with (session, outcome) after every tool call (inspect, live)
        self.listeners: list[Callable[[RunSession, Any, ToolCall], None]] = []

    # ------------------------------------------------------------------ events
    def handle(self, event: TraceEvent) -> None:
        self.version += 1
        if isinstance(event, ToolCall):
            self._on_call(event)
        elif isinstance(event, Usage):
            self._tokens.add(event)
            self._touch(event.timestamp)
        elif isinstance(event, StatedContext):
            self._on_stated(event)
        elif isinstance(event, RunInfo):
            self._on_info(event)
        elif isinstance(event, RunEnd):
            self.ended = True
            self.end_reason = event.reason
            if event.patch and event.patch.strip():
                self.trace_patch = event.patch
            self._touch(event.timestamp)
        elif isinstance(event, BadLine):
            self.extras.bad_lines[str(event.reason)] += 1

    def _touch(self, ts: float | None) -> None:
        if ts is None:
            return
        ex = self.extras
        if ex.started_at is None or ts < ex.started_at:
            ex.started_at = ts
        if ex.last_event_at is None or ts > ex.last_event_at:
            ex.last_event_at = ts

    def _on_info(self, info: RunInfo) -> None:
        ti = self.trace_info
        if info.cwd:
            # the agent's workspace root: exact paths under it beat shorter suffix
            # matches, and `..` escapes out of it are recognised
            self.builder.add_root(info.cwd)
        for name in ("session_id", "agent", "model", "cwd", "instance_id"):
            value = getattr(info, name)
            if value and not getattr(ti, name):
                setattr(ti, name, value)
        self._touch(info.timestamp)

    def _on_call(self, call: ToolCall) -> None:
        ex = self.extras
        self._touch(call.started_at)
        self._touch(call.ended_at)
        if call.sidechain and not self.include_sidechain:
            # sub-agent calls are kept apart: counted, never steps of this run
            ex.sidechain_calls += 1
            return
        outcome = self.builder.consume(call)
        self.last_call = call
        ex.tool_calls += 1
        ex.categories[outcome.category] += 1
        ex.edits += len(outcome.edits)
        for reason, _msg in outcome.problems:
            ex.problems[str(getattr(reason, "value", reason))] += 1
        for path in outcome.context_files:
            ex.context_file_reads[path] += 1
        # A format that states the step itself (ContextBench mini-swe-agent
        # <EXPLORE_CONTEXT>) already added it as a StatedContext: never count it twice.
        stated = bool(call.structured and call.structured.get("stated_context"))
        if outcome.step is not None and not stated:
            self._add_step(outcome.step, call.ended_at or call.started_at)
        for listener in self.listeners:
            listener(self, outcome, call)

    def _on_stated(self, ev: StatedContext) -> None:
        step = self._resolve_stated(ev.step)
        if ev.final:
            if self.state is not None:
                self.state.set_final_context(step)
        else:
            self._add_step(step, ev.step.timestamp)

    def _resolve_stated(self, step: Step) -> Step:
        """Stated contexts carry trace paths: resolve them (METRICS.md section 2)."""
        if self.view is None:
            return step
        from .reading.paths import resolve_step

        return resolve_step(self.view, step, self._resolved)

    def _add_step(self, step: Step, ts: float | None) -> None:
        if self.state is not None:
            self.state.add_step(step)
        self._steps += 1
        n = self._steps
        ex = self.extras
        if ex.first_gold_file_step is None and any(f in self._gold_files for f in step.files):
            ex.first_gold_file_step = n
            ex.first_gold_file_seconds = self._since_start(ts)
        if ex.first_gold_line_step is None and self._touches_gold_lines(step):
            ex.first_gold_line_step = n
            ex.first_gold_line_seconds = self._since_start(ts)

    def _touches_gold_lines(self, step: Step) -> bool:
        for path, ranges in step.spans.items():
            gold = self._gold_lines.get(path)
            if gold and any(gold.overlap(min(a, b), max(a, b)) for a, b in ranges):
                return True
        return False

    def _since_start(self, ts: float | None) -> float | None:
        start = self.extras.started_at
        if ts is None or start is None:
            return None
        return max(0.0, ts - start)

    # ------------------------------------------------------------------ patch
    def set_patch(self, patch: str | None, source: str) -> bool:
        """Land the model patch (beside the trace, predictions file, ...).

        Returns True when it changed what EditLoc will be computed from.
        """
        if not patch or not patch.strip() or patch == self.patch:
            return False
        self.patch, self.patch_source = patch, source
        self.version += 1
        return True

    @property
    def final_patch(self) -> str | None:
        """The patch EditLoc is final on: a landed one, else one the trace carried."""
        return self.patch or self.trace_patch

    def final_editloc(self) -> dict | None:
        """EditLoc on the final patch (None without one); cached per patch, since a
        scrape asks for it on every finished run every time."""
        patch = self.final_patch
        if patch is None or self.gold is None:
            return None
        if self._final_editloc is None or self._final_editloc[0] is not patch:
            from .editloc import editloc

            self._final_editloc = (patch, editloc(patch, self.gold))
        return self._final_editloc[1]

    def provisional_editloc(self) -> dict | None:
        """EditLoc of the edits seen so far (before the patch lands); cached per edit count."""
        if self.gold is None:
            return None
        key = self.extras.edits
        if self._provisional_cache is not None and self._provisional_cache[0] == key:
            return self._provisional_cache[1]
        from .editloc import editloc

        value = editloc(self.builder.provisional_patch(), self.gold) if key else None
        self._provisional_cache = (key, value)
        return value

    # ------------------------------------------------------------------ views
    @property
    def num_steps(self) -> int:
        return self._steps

    def record(self) -> dict:
        """The METRICS.md section 5 record plus run identity and live extras."""
        ident = self.identity
        if self.error is not None or self.state is None:
            return {"instance_id": ident.instance_id, "error": self.error or "not evaluated",
                    "run_id": ident.run_id}
        if self.fmt == "unified" and self.state.final_context_empty:
            # METRICS.md 4b: unified predictions resolving to nothing, as replay says it
            return {"instance_id": ident.instance_id, "error": Reason.NO_CONTEXT_EXTRACTED.value}
        rec = self.state.record(self.final_patch)
        tokens, cost = self._tokens.totals()
        ex = self.extras
        rec.update({
            "run_id": ident.run_id,
            "agent": ident.agent if ident.agent != "unknown" else (self.trace_info.agent or "unknown"),
            "model": ident.model if ident.model != "unknown" else (self.trace_info.model or "unknown"),
            "format": self.fmt,
            "tool_calls": ex.tool_calls,
            "sidechain_calls": ex.sidechain_calls,
            "categories": dict(sorted(ex.categories.items())),
            "context_file_reads": dict(sorted(ex.context_file_reads.items())),
            "first_gold_file_step": ex.first_gold_file_step,
            "first_gold_line_step": ex.first_gold_line_step,
            "first_gold_file_seconds": ex.first_gold_file_seconds,
            "first_gold_line_seconds": ex.first_gold_line_seconds,
            "tokens": {"input": tokens.input_tokens, "output": tokens.output_tokens,
                       "cache_read": tokens.cache_read_tokens,
                       "cache_creation": tokens.cache_creation_tokens},
            "cost_usd": cost,
            "started_at": ex.started_at,
            "ended_at": ex.last_event_at,
            "end_reason": self.end_reason,
            "patch_source": self.patch_source or ("trace" if self.trace_patch else None),
            "bad_lines": dict(sorted(ex.bad_lines.items())),
            "problems": dict(sorted(ex.problems.items())),
        })
        return rec

    def tokens(self) -> tuple[TokenUsage, float | None]:
        return self._tokens.totals()


def _gold_sets(gold) -> tuple[frozenset[str], dict[str, IntervalSet]]:
    if gold is None:
        return frozenset(), {}
    files = frozenset(s.file for s in gold.gold_context)
    lines: dict[str, IntervalSet] = {}
    for s in gold.gold_context:
        a, b = sorted((s.start_line, s.end_line))
        if b > 0:
            lines.setdefault(s.file, IntervalSet()).add(max(1, a), b)
    return files, lines


# ---------------------------------------------------------------------- reading files


SessionFactory = Callable[[str | None], RunSession]


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
        if isinstance(event, RunInfo) and event.instance_id:
            seen = cur.trace_info.instance_id if cur is not None else None
            if cur is None or (seen and seen != event.instance_id):
                cur = self.factory(event.instance_id)
                self.sessions.append(cur)
        if cur is None:
            cur = self.factory(None)
            self.sessions.append(cur)
        return cur

    def dispatch(self, events: Iterable[TraceEvent]) -> None:
        for ev in events:
            self._session_for(ev).handle(ev)
            if self.on_bad is not None and isinstance(ev, BadLine):
                self.on_bad(ev)

    def feed_line(self, line: bytes, lineno: int) -> None:
        self.lines += 1
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
            self.sessions.append(self.factory(None))
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
    """The exact bytes a record is written as, by replay and the watcher alike."""
    import orjson

    return orjson.dumps(record) + b"\n"


def iter_lines(path: Path, chunk: int = 1 << 20) -> Iterable[tuple[bytes, int]]:
    """Whole lines of a file with 1-based numbers; a last line without newline included."""
    lineno = 0
    rest = b""
    with open(path, "rb") as fh:
        while True:
            data = fh.read(chunk)
            if not data:
                break
            data = rest + data
            parts = data.split(b"\n")
            rest = parts.pop()
            for part in parts:
                lineno += 1
                yield part.rstrip(b"\r"), lineno
    if rest:
        yield rest.rstrip(b"\r"), lineno + 1


# ---------------------------------------------------------------------- one-call API


@dataclass(slots=True)
class Resources:
    """Gold, repos and the symbol cache shared by every session of a process."""

    gold: Any  # gold.GoldSet
    repos: Any  # repo.RepoCache
    symbols: Any = None  # symbols.SymbolIndex

    def lookup(self, instance_id: str | None):
        return self.gold.get(instance_id) if (self.gold is not None and instance_id) else None


def load_resources(gold: str, repos: str | None, repo: str | None) -> Resources:
    """Gold, repositories (``--repos``/``--repo``) and a symbol index, as every command loads them."""
    from .gold import load_gold
    from .repo import RepoCache
    from .symbols import SymbolIndex

    return Resources(load_gold(gold), RepoCache(repos, repo), SymbolIndex())


def run_identity(base: RunIdentity, trace_instance: str | None, index: int,
                 res: Resources, explicit: bool = False,
                 trace: Path | None = None) -> RunIdentity:
    """The identity of the ``index``-th run found in one trace file.

    The file's own identity (meta.json, ``--instance``, directory name) names its first
    run, except when that names no gold row, was not given explicitly, and the trace
    says which instance it ran (or, failing that, the file name carries a gold id). Later runs of the same file (OpenHands holds one
    instance per line) are the trace's own instances, their run ids suffixed.
    """
    if not trace_instance:
        if explicit or index > 0 or trace is None or res.lookup(base.instance_id) is not None:
            return base
        from .identity import instance_candidates

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
    gold = res.lookup(identity.instance_id)
    if gold is None:
        bad = res.gold.error_for(identity.instance_id) if res.gold is not None else None
        if bad:
            return RunSession(identity, fmt=fmt, error=f"{Reason.BAD_GOLD.value}: {bad}", **kw)
        return RunSession(identity, fmt=fmt, error=(
            f"{Reason.MISSING_GOLD.value}: no gold row for instance {identity.instance_id!r}; give the "
            "trace a meta.json with instance_id, or pass --instance, or check --gold"), **kw)
    try:
        view = res.repos.view_for(gold)
    except (RepoError, StreamevalError) as exc:
        return RunSession(identity, gold, fmt=fmt, error=f"{exc.reason.value}: {exc}", **kw)
    return RunSession(identity, gold, view, res.symbols, fmt=fmt, **kw)


def open_adapter(path: Path, fmt: str | None = None):
    """(format name, adapter instance) for a trace file; raises TraceFormatError."""
    from .formats import adapter_class, detect_format

    name = fmt or detect_format(read_head(path))
    return name, adapter_class(name)()


def evaluate_trace(path: str | Path, res: Resources, *, fmt: str | None = None,
                   instance: str | None = None, patch: str | None = None) -> list[dict]:
    """Score one recorded trace file; one record per run it holds.

    The patch comes, in order, from ``patch`` (e.g. a predictions file), a
    ``patch.diff``/``model.patch`` beside the trace, or the trace's own final event.
    """
    from .identity import identify, patch_beside

    path = Path(path)
    identity = identify(path, instance)
    try:
        name, adapter = open_adapter(path, fmt)
    except StreamevalError as exc:
        return [{"instance_id": identity.instance_id, "error": f"{exc.reason.value}: {exc}",
                 "run_id": identity.run_id}]
    side_patch = patch if patch is not None else patch_beside(path)
    def factory(trace_instance: str | None) -> RunSession:
        ident = run_identity(identity, trace_instance, len(reader.sessions), res,
                             explicit=instance is not None, trace=path)
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


__all__ = ["RunSession", "TraceReader", "Resources", "evaluate_trace", "make_session",
           "open_adapter", "iter_lines", "read_head", "record_line", "land_file_patch", "load_resources",
           "GRANULARITIES"]
