"""Which trace a file is part of, when a trace is more than one file.

Two agents write one run over several files:

- the OpenHands agent SDK persists a conversation as a directory, one JSON file per
  event (``<conversation>/events/event-00003-<uuid>.json``, beside ``base_state.json``):
  the trace is the conversation directory, read event file by event file
  (``traces.eventdir``);
- Claude Code 2.1 writes each sub-agent's transcript beside its session
  (``<session>.jsonl`` and ``<session>/subagents/agent-<id>.jsonl``) and echoes its
  messages into the session (``agent_progress`` lines): when the session file is there,
  the sub-agent's transcript is part of that run, not a run of its own. Read alone (no
  session beside it), it is one.

Replay (a directory walked), ``watch`` and the survey ask ``trace_of`` for every file
they find, so they agree on what one trace is; nothing here reads a file's content.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

__all__ = ["EVENT_FILE", "EVENTS_DIR", "trace_of", "is_conversation", "event_files"]

#: an SDK event file's name, and the directory of them inside a conversation
EVENT_FILE = "event-*.json"
EVENTS_DIR = "events"
#: the conversation's own state, written beside ``events/``
BASE_STATE = "base_state.json"


def _is_event_file(name: str) -> bool:
    return fnmatch.fnmatchcase(name, EVENT_FILE)


def event_files(directory: Path) -> list[Path]:
    """The event files of a conversation directory (``events/`` inside it, or the
    directory itself when it is that ``events/``), in the order they were written:
    their names number them (``event-00012-...``), zero-padded."""
    inner = directory / EVENTS_DIR
    where = inner if inner.is_dir() else directory
    try:
        names = [e.name for e in where.iterdir() if _is_event_file(e.name) and e.is_file()]
    except OSError:
        return []
    return [where / n for n in sorted(names)]


def is_conversation(path: Path) -> bool:
    """A directory holding an SDK conversation: an ``events/`` directory (possibly still
    empty, with the conversation's ``base_state.json``), or event files themselves."""
    try:
        if not path.is_dir():
            return False
        inner = path / EVENTS_DIR
        if inner.is_dir() and ((path / BASE_STATE).is_file() or event_files(path)):
            return True
        return any(_is_event_file(e.name) for e in path.iterdir())
    except OSError:
        return False


def trace_of(path: Path) -> Path:
    """The trace ``path`` is part of: the conversation directory of an SDK event file,
    the session of a Claude sub-agent transcript whose session file is present, else
    ``path`` itself."""
    path = Path(path)
    parent = path.parent
    if _is_event_file(path.name) and parent.name == EVENTS_DIR:
        return parent.parent
    if path.name == BASE_STATE and (parent / EVENTS_DIR).is_dir():
        return parent   # the conversation's state beside its events: no trace of its own
    if parent.name == "subagents" and path.name.startswith("agent-") \
            and path.name.endswith(".jsonl"):
        session = parent.parent.with_name(parent.parent.name + ".jsonl")
        if session.is_file():
            return session
    return path
