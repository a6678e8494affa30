"""The run ids a worker's traces will ask for, told to the supervisor before the worker
reads them (``watch --workers N``).

Which of two runs asking for one id gets it bare is decided by who asks first
(``traces.identity.RunIds``): one watcher reads the traces it finds at its start in the
order of the walk, so the first in that order gets it (replay too). Workers read theirs
at once, each at its pace, and who asks first would be a race. So before reading, each
worker says which id the first run of each of its traces will ask for, and the
supervisor keeps each id two traces ask for bare for the first of them in walk order
(``live.arbiter``): the ids are one watcher's, whichever worker asks first.

The id comes from where the run's will: ``meta.json``, else the trace's own session id
(its first event), else the trace's path (``runs.evaluate.run_identity``). A line trace
is read up to its first event; a whole document (its events come at its end) whole,
without scoring anything.
"""

from __future__ import annotations

import logging

from streameval.errors import TraceFormatError
from streameval.live.follow import POLL_BYTES, TraceFollower
from streameval.model import RunInfo
from streameval.runs.evaluate import run_identity
from streameval.traces.files import HEAD_LINES, open_tail
from streameval.traces.formats import adapter_class, detect_format
from streameval.traces.identity import trace_name

log = logging.getLogger(__name__)

#: bytes of a line trace read at most for its first event
FIRST_EVENT_BYTES = 1 << 24


def first_session_id(f: TraceFollower) -> str | None:
    """The session id the first event of ``f``'s trace names, if it is a run's start
    (None: none, or the trace cannot be read that far)."""
    try:
        tail = open_tail(f.path)
        lines: list[tuple[bytes, int]] = []
        size = 0
        while size <= FIRST_EVENT_BYTES:
            batch = tail.poll(final=True, max_bytes=POLL_BYTES)
            got = [(line, n) for line, n in batch.ordered() if line is not None]
            lines += got
            size += sum(len(line) for line, _n in got)
            if not batch.more:
                break
        head = [line for line, _n in lines if line.strip()][:HEAD_LINES]
        if not head:
            return None
        adapter = adapter_class(f.forced_fmt or detect_format(head))()
        for line, n in lines:
            for ev in adapter.feed(line, n):
                return ev.session_id if isinstance(ev, RunInfo) else None
        for ev in adapter.close():
            return ev.session_id if isinstance(ev, RunInfo) else None
    except (TraceFormatError, OSError, ValueError):
        return None
    except Exception:   # noqa: BLE001 - an adapter's bug: the run asks when it is read
        log.debug("%s: its first event could not be read ahead", f.path, exc_info=True)
    return None


def first_run_id(f: TraceFollower) -> str:
    """The run id the first run of ``f``'s trace will ask for."""
    base = f.identity
    session_id = None if base.run_id_given else first_session_id(f)
    return run_identity(base, None, 0, f.res, explicit=f.instance is not None,
                        trace=f.key_path, session_id=session_id).run_id


def declaration(followers: list[TraceFollower]) -> list[list]:
    """``[run id, trace, whether the trace is a folder]`` of each follower's first run
    (the trace named as runs name it)."""
    return [[first_run_id(f), trace_name(f.key_path, f.root), f.path.is_dir()] for f in followers]
