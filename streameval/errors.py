"""Exceptions and error-counter reasons, named for the state they report.

The ``reason`` label of every ``streameval_*_errors_total`` / bad-line counter is one
of the ``Reason`` values below, so dashboards and docs can list them.
"""

from __future__ import annotations

import signal
import threading
from enum import Enum


class Reason(str, Enum):
    """Why a line, a read or an instance could not be used."""

    # trace lines
    MALFORMED_JSON = "malformed_json"
    NOT_AN_OBJECT = "not_an_object"
    UNKNOWN_EVENT = "unknown_event"
    MISSING_FIELD = "missing_field"
    LINE_TOO_LONG = "line_too_long"
    NOT_UTF8 = "not_utf8"
    PARTIAL_LINE = "partial_line"
    UNKNOWN_FORMAT = "unknown_format"  # a watched file no adapter recognises
    BAD_PREDICTION = "bad_prediction"  # a --predictions line without instance_id
    #: an action the adapter saw (a tool call, a command) but could not turn into a call
    UNREAD_ACTION = "unread_action"
    # reads and edits
    UNKNOWN_TOOL = "unknown_tool"
    PATH_OUTSIDE_REPO = "path_outside_repo"
    PATH_NOT_IN_REPO = "path_not_in_repo"
    BAD_LINE_RANGE = "bad_line_range"
    UNPARSED_COMMAND = "unparsed_command"
    EDIT_NOT_LOCATED = "edit_not_located"
    # instances
    MISSING_GOLD = "missing_gold"
    BAD_GOLD = "bad_gold"
    MISSING_REPO = "missing_repo"
    MISSING_COMMIT = "missing_commit"
    UNREADABLE_PREDICTION = "unreadable_prediction"
    NO_CONTEXT_EXTRACTED = "no_context_extracted"
    INTERNAL_ERROR = "internal_error"  # a bug met while evaluating; the batch goes on
    WORKER_LOST = "worker_lost"  # replay --engine ray: its worker failed twice; the batch goes on
    # runs whose numbers would be meaningless (error records, docs/metrics.md §5b)
    GOLD_NOT_IN_REPO = "gold_not_in_repo"  # no gold file is in the repository tried
    TRUNCATED_TRACE = "truncated_trace"  # the trace ends mid-document or mid-line
    NO_CALLS_READ = "no_calls_read"  # the trace holds actions, none read as a call
    # runs scored, but whose numbers say less than they seem (flags, docs/metrics.md §5b)
    NOTHING_READ = "nothing_read"  # the final context is empty: precision 1.0 by convention
    MOSTLY_OUTSIDE_REPO = "mostly_outside_repo"  # most paths read name no repository file
    #: no gold row names the run's instance: its gold-free signals are scored, its gold
    #: metrics are null (docs/metrics.md §5b)
    NO_GOLD = "no_gold"
    #: its gold row's repository cannot be had: gold metrics and the signals that need
    #: base text are null, the others are scored (docs/metrics.md §5b)
    NO_REPO = "no_repo"
    # ... and loud: replay exits 1 over them (docs/metrics.md §5b)
    NO_END_EVENT = "no_end_event"  # a format that always ends with an end event, without it
    REPO_MISMATCH = "repo_mismatch"  # reads showed text the repository does not have there


#: The flags whose numbers may be wrong, not only say less: the run is scored and
#: flagged, and ``replay`` exits 1 as for a run not scored (docs/metrics.md §5b).
LOUD_FLAGS: frozenset[str] = frozenset({Reason.NO_END_EVENT.value, Reason.REPO_MISMATCH.value})
#: The problems that question a whole run's numbers rather than one call's: a run has
#: each at most once, and tables count the runs that carry any (docs/metrics.md §5b).
RUN_FLAGS: frozenset[str] = frozenset({Reason.NOTHING_READ.value,
                                       Reason.MOSTLY_OUTSIDE_REPO.value,
                                       Reason.NO_GOLD.value, Reason.NO_REPO.value}) | LOUD_FLAGS
#: the flags of a run measured against no gold (``Record`` key ``gold_missing``)
GOLD_MISSING: frozenset[str] = frozenset({Reason.NO_GOLD.value, Reason.NO_REPO.value})


class StreamevalError(Exception):
    """Base of every error streameval raises on purpose."""

    reason: Reason = Reason.MALFORMED_JSON

    def __init__(self, message: str, reason: Reason | None = None):
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class GoldError(StreamevalError):
    """A gold row is missing or unusable; the message names the instance id."""

    reason = Reason.BAD_GOLD


class RepoError(StreamevalError):
    """A repository or commit cannot be found or read."""

    reason = Reason.MISSING_REPO


class TraceFormatError(StreamevalError):
    """A trace's format is unknown or cannot be detected."""

    reason = Reason.UNREADABLE_PREDICTION


class UsageError(StreamevalError):
    """A setting that cannot work (a port in use, an unreadable gold file...): the
    command says so in one line and exits 2, never with a traceback."""


class Interrupted(Exception):
    """Ctrl-C, caught where a command knows what it kept. The message says it in a few
    words (``193 of 450 records written to out.jsonl``); the command prints
    ``streameval CMD: interrupted: MESSAGE`` on stderr and exits 130, as a shell's
    program killed by SIGINT does."""


class Whole:
    """A Ctrl-C that lands while a record is being written and counted is held until
    both are done: ``replay --workers 2`` once wrote a 13th record and said "12 of 400
    records written" (the interrupt came between the write and the count). Outside the
    block, Ctrl-C raises at once, so a wait on the pool stays interruptible."""

    def __init__(self) -> None:
        self._inside = False
        self._pending = False
        self._before = None

    def __enter__(self) -> Whole:
        if threading.current_thread() is threading.main_thread():
            self._before = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._before is not None:
            signal.signal(signal.SIGINT, self._before)

    def _on_sigint(self, signum, frame) -> None:
        if self._inside:
            self._pending = True
        else:
            raise KeyboardInterrupt

    def hold(self) -> None:
        """From here until ``release``, a Ctrl-C waits."""
        self._inside = True

    def release(self) -> None:
        self._inside = False
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt
