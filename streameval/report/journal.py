"""What a run's tool calls showed, kept call by call: the memory behind the run page and
``inspect``'s per-step column.

A ``RunSnapshot`` is a run at one moment, O(1) in its length, and the record holds the
per-step curve; the page and ``inspect`` also need what happened *along the way*: which
base lines of each file were first credited at which step, what each call was credited
with. A ``RunJournal`` is a session listener (``RunSession.listeners``) that keeps
exactly that, as plain values, while the session scores the calls. It reads the call's
outcome and the session's step count, nothing else: a few microseconds a call, however
long the run (the numbers are read from the snapshot and the record when shown).

Memory is bounded per run: at most ``max_calls`` call rows (later calls are counted,
not kept), at most ``MAX_WINDOWS`` uncredited windows per file, line sets kept as
merged intervals.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from streameval.intervals import IntervalSet, canonical
from streameval.model import ToolCall
from streameval.reading.describe import describe_call

#: call rows a journal keeps per run; later calls are only counted (``dropped``)
MAX_CALLS = 1000
#: characters of a call's input kept (the page shows the start; ``inspect`` the trace)
MAX_TEXT = 400
#: windows shown but not (fully) credited, kept per file to explain gold not credited
MAX_WINDOWS = 50
#: names of a listing kept per call (the count is always exact)
MAX_LISTED = 20


@dataclass(frozen=True, slots=True)
class ReadRow:
    """One read of a call: the file, the window it proposed (current lines) and the
    base lines it was credited with, and its shown lines by outcome."""

    file: str
    in_repo: bool
    current: tuple[tuple[int, int], ...]
    base: tuple[tuple[int, int], ...]
    agent: int
    unaligned: int
    by_text: bool


@dataclass(frozen=True, slots=True)
class CallRow:
    """One tool call as the page lists it."""

    n: int
    step: int | None
    tool: str
    category: str
    text: str
    reads: tuple[ReadRow, ...]
    listed: int
    listed_names: tuple[str, ...]
    edits: tuple[str, ...]
    problems: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Window:
    """A read of ``file`` whose shown lines were not all credited: why, and where."""

    call: int
    current: tuple[tuple[int, int], ...]
    why: str


@dataclass(slots=True)
class FileTrail:
    """One repository file along a run: base lines by the step that first credited
    them, the call that first listed it, the calls that edited it."""

    credited: IntervalSet = field(default_factory=IntervalSet)
    #: (first line, last line, step): pieces of ``credited`` by the step that added them
    by_step: list[tuple[int, int, int]] = field(default_factory=list)
    listed_at: int | None = None
    first_read_call: int | None = None
    edited_at: list[int] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)


def uncredited_reason(r: Any) -> str | None:
    """Why the lines a read showed were not all credited, or None when they were.

    ``r`` is a ``ResolvedRead``; the reasons are those ``inspect`` prints under a read
    (docs/inspect.md, docs/metrics.md §6e)."""
    if r.repo_path is None:
        return "not a file of the repository"
    if r.agent:
        return f"{r.agent} shown line(s) were the agent's own (no base-commit counterpart)"
    if not r.base and r.by_text:
        return "the shown text matched no base-commit line"
    if not r.base and not r.current:
        return "which lines were shown is not known"
    return None


class RunJournal:
    """A session listener: ``journal(session, outcome, call)`` after every call."""

    def __init__(self, max_calls: int = MAX_CALLS):
        self.max_calls = max_calls
        self._calls: list[CallRow] = []
        #: calls seen beyond ``max_calls`` (counted, not kept)
        self.dropped = 0
        self.n = 0
        self._files: dict[str, FileTrail] = {}
        #: the call rows and file trails of a finished run, as one bytes object
        #: (``settle``): read back when a page asks
        self._frozen: bytes | None = None
        #: call rows given up after the run finished (``forget_calls``)
        self.calls_forgotten = False
        #: the last call's step number (None: it was no step)
        self.last_step: int | None = None

    @property
    def calls(self) -> list[CallRow]:
        """The call rows kept (a copy, once settled: they no longer move)."""
        return self._thawed()[0] if self._frozen is not None else self._calls

    @property
    def files(self) -> dict[str, FileTrail]:
        """Each repository file along the run (a copy, once settled)."""
        return self._thawed()[1] if self._frozen is not None else self._files

    def _thawed(self) -> tuple[list[CallRow], dict[str, FileTrail]]:
        return pickle.loads(self._frozen)   # noqa: S301 - our own bytes (settle)

    def settle(self) -> None:
        """The run is finished: its rows and trails kept as one bytes object. A watcher
        keeps thousands of finished runs, and a full garbage collection walks every
        object they keep (some forty a run as rows, intervals and lists); a page that
        shows one reads them back. A call after all wakes them."""
        if self._frozen is None:
            self._frozen = pickle.dumps((self._calls, self._files), pickle.HIGHEST_PROTOCOL)
            self._calls, self._files = [], {}

    def _wake(self) -> None:
        if self._frozen is not None:
            (self._calls, self._files), self._frozen = self._thawed(), None

    # ------------------------------------------------------------------ listening
    def __call__(self, session: Any, outcome: Any, call: ToolCall) -> None:
        self._wake()
        self.n += 1
        step = None
        if outcome.step is not None:
            step = session.num_steps   # the session added the step before telling us
            self._credit(outcome.step, step)
        self._trail(outcome, step)
        self.last_step = step
        if len(self._calls) < self.max_calls and not self.calls_forgotten:
            self._calls.append(_row(self.n, step, outcome, call))
        else:
            self.dropped += 1

    def _credit(self, step_value: Any, step: int) -> None:
        files = self._files
        for path, ranges in step_value.spans.items():
            trail = files.get(path)
            if trail is None:
                trail = files[path] = FileTrail()
            merged = canonical(ranges) if ranges and ranges[0][0] >= 1 else None
            if merged is not None:
                # a step's ranges as the reading makes them (sorted, apart, from line 1):
                # merged into the trail in one pass, as the state merges them (a search
                # step has a range per hit); the pieces are those of one add per range
                pieces, _ = trail.credited.add_set(IntervalSet.of_canonical(*merged))
                trail.by_step += [(x, y, step) for x, y in pieces]
                continue
            for a, b in ranges:
                lo, hi = (a, b) if a <= b else (b, a)
                for x, y in trail.credited.add(max(1, lo), hi):
                    trail.by_step.append((x, y, step))

    def _trail(self, outcome: Any, step: int | None) -> None:
        for r in outcome.reads:
            if r.repo_path is None:
                continue
            trail = self._files.setdefault(r.repo_path, FileTrail())
            if r.listing:
                if trail.listed_at is None:
                    trail.listed_at = self.n
                continue
            if trail.first_read_call is None:
                trail.first_read_call = self.n
            why = uncredited_reason(r)
            if why is not None and len(trail.windows) < MAX_WINDOWS:
                trail.windows.append(Window(self.n, tuple(map(tuple, r.current)), why))
        for path in outcome.edits:
            trail = self._files.setdefault(path, FileTrail())
            if len(trail.edited_at) < MAX_WINDOWS:
                trail.edited_at.append(self.n)

    def forget_calls(self) -> None:
        """Drop the call rows (a finished run among many): the curve and the file
        trails stay (settled); the page says the rows are gone and where to find them."""
        self._wake()
        self._calls = []
        self.calls_forgotten = True
        self.settle()   # only forgotten for a finished run


def _row(n: int, step: int | None, outcome: Any, call: ToolCall) -> CallRow:
    listed = [r for r in outcome.reads if r.listing]
    names = tuple((r.repo_path or r.trace_path) for r in listed[:MAX_LISTED])
    reads = tuple(
        ReadRow(r.repo_path or r.trace_path, r.repo_path is not None,
                tuple(map(tuple, r.current)), tuple(map(tuple, r.base)),
                r.agent, r.unaligned, r.by_text)
        for r in outcome.reads if not r.listing)
    problems = tuple((str(getattr(reason, "value", reason)), str(msg)[:MAX_TEXT])
                     for reason, msg in outcome.problems)
    return CallRow(n, step, str(call.tool)[:MAX_TEXT], outcome.category,
                   describe_call(call, MAX_TEXT), reads, len(listed), names,
                   tuple(outcome.edits), problems)
