"""One trace file's lines -> its adapter's events -> one RunSession per run it holds."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import orjson

from streameval.errors import Reason
from streameval.model import BadLine, RunInfo, TraceEvent
from streameval.scoring.session import RunSession
from streameval.traces.formats import end_event
from streameval.traces.formats.base import Adapter

log = logging.getLogger(__name__)


#: makes the session of a new run from the event that started it (a RunInfo naming its
#: instance and session, or None): ``(trace_instance, session_id) -> RunSession``
SessionFactory = Callable[[str | None, str | None], RunSession]


class TraceReader:
    """One trace file: lines -> adapter events -> one RunSession per run in the file.

    A new session starts when the trace names a *different* instance id than the
    current session's (OpenHands ``output.jsonl`` holds one instance per line);
    a second ``init`` of the same run (Claude's auto-continue) stays in one session.
    """

    def __init__(self, adapter: Adapter, factory: SessionFactory,
                 on_bad: Callable[[BadLine], None] | None = None):
        self.adapter = adapter
        self.factory = factory
        self.on_bad = on_bad  # process-wide counting (live exporter)
        self.sessions: list[RunSession] = []
        self.lines = 0

    def shed(self) -> None:
        """The file's runs are over and its adapter closed: keep the sessions only (the
        follower reads a file that grows again with a new reader). A watcher keeps
        thousands of finished runs; their adapters' state is not worth keeping."""
        self.adapter = self.factory = self.on_bad = None  # type: ignore[assignment]

    @property
    def current(self) -> RunSession | None:
        return self.sessions[-1] if self.sessions else None

    def _session_for(self, event: TraceEvent) -> RunSession:
        cur = self.current
        if cur is not None and self.adapter.run_per_line and isinstance(event, BadLine) \
                and event.reason == Reason.PARTIAL_LINE.value:
            # every line is a whole run: the cut one is a run of its own, never a
            # stain on the whole run before it
            cur = self.factory(None, None)
            self.sessions.append(cur)
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

    def feed_line(self, line: bytes | None, lineno: int, unterminated: bool = False) -> None:
        """One line; None for a line too long to hold (``iter_lines``, the watcher's
        tail), which is a bad line of the current run. ``unterminated``: the file ends
        on this line without its newline (``iter_marked_lines``); if its JSON does not
        parse either, the trace was cut there (``partial_line``, not ``malformed_json``)."""
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
        if unterminated and not _parses(line):
            events = [_cut(ev) if _undecoded(ev, lineno) else ev for ev in events]
        self.dispatch(events)

    def close(self, final: bool = True) -> list[RunSession]:
        """The adapter flushed: every run of the file as it stands. ``final``: the runs
        end here (``ends``); a watcher re-reading a document saved mid-run passes False."""
        try:
            events = self.adapter.close()
        except Exception as exc:
            log.exception("adapter %s failed at close", type(self.adapter).__name__)
            events = [BadLine(self.lines, Reason.MALFORMED_JSON.value, f"adapter error: {exc!r}")]
        self.dispatch(events)
        if not self.sessions:  # an empty trace is still a run: coverage 0
            self.sessions.append(self.factory(None, None))
        if final:
            self.ends()
        return self.sessions

    def ends(self) -> None:
        """The runs are over as the file stands: one of a shape that always ends with an
        end event and has not had it is told which (docs/metrics.md §5b, ``no_end_event``)."""
        expected = end_event(self.adapter)
        if expected is not None:
            for session in self.sessions:
                if not session.ended:
                    session.end_missing(expected)


def _parses(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except ValueError:
        return False
    return True


def _undecoded(event: TraceEvent, lineno: int) -> bool:
    """A line of ``lineno`` that did not decode: JSON that does not parse, or bytes cut
    in the middle of a UTF-8 character."""
    return isinstance(event, BadLine) and event.lineno == lineno and \
        event.reason in (Reason.MALFORMED_JSON.value, Reason.NOT_UTF8.value)


def _cut(event: BadLine) -> BadLine:
    return BadLine(event.lineno, Reason.PARTIAL_LINE.value,
                   f"line {event.lineno} ends without its newline before its JSON does "
                   "(the file was cut short, or is still being written)")
