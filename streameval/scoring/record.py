"""A run's record: the docs/metrics.md §5 document, and the one line it is written as.

A record is a JSON object whose keys keep the rule book's order (its bytes are compared
between replay and watch), so ``Record`` is a dict; what it adds is the one way to make
the record of a run that cannot be scored, and the one way to write any record.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import orjson

from streameval.model import RunIdentity
from streameval.sane import jsonable


class Record(dict):
    """One run's record (docs/metrics.md §5); an error record has ``error`` instead of
    numbers.

    ``session_id`` rides along outside the JSON (it is never written: the record's bytes
    do not change): the session id the trace states, which ties the scores to the
    agent's own telemetry (``gen_ai.conversation.id``, ``report.otel``). It survives
    pickling, so records from worker processes and Ray tasks keep it.
    """

    session_id: str | None = None

    @classmethod
    def error(cls, instance_id: str | None, reason: Enum | str, message: str | None = None,
              *, run_id: str | None = None, trace: str | None = None,
              **extra: Any) -> Record:
        """The record of a run that cannot be scored: ``error`` starts with the stable
        reason (``missing_gold``, ``no_context_extracted``...), then the message.
        ``run_id`` and ``trace`` follow when the run has them, then ``extra``
        (``source`` for an input that names no run)."""
        reason = reason.value if isinstance(reason, Enum) else reason
        text = reason if message is None or message == reason else f"{reason}: {message}"
        rec = cls(instance_id=instance_id, error=text)
        if run_id is not None:
            rec["run_id"] = run_id
        if trace is not None:
            rec["trace"] = trace
        rec.update(extra)
        return rec

    @property
    def is_error(self) -> bool:
        return "error" in self


def is_record(obj: object) -> bool:
    """Is this decoded JSON a record (replay's and ``watch --out``'s lines)? An object
    naming its instance with its numbers (``num_steps``) or why it has none (``error``);
    a trace's line names neither, and a unified prediction (``traj_data``) is an input."""
    return (isinstance(obj, dict) and "instance_id" in obj
            and ("num_steps" in obj or "error" in obj) and "traj_data" not in obj)


def error_record(identity: RunIdentity, error: str) -> Record:
    """The error record of a run whose identity is known; ``error`` is already
    ``reason: message`` (a session's ``error``). A run with an experiment or labels
    keeps them, so a comparison counts its errors in its arm, and a known outcome
    (``resolved``) too: a run that could not be scored may still have solved its task."""
    extra: dict[str, Any] = {}
    if identity.experiment is not None:
        extra["experiment"] = identity.experiment
    if identity.run_labels:
        extra["labels"] = dict(identity.run_labels)
    if identity.resolved is not None:
        extra["resolved"] = identity.resolved
    return Record.error(identity.instance_id, error, run_id=identity.run_id,
                        trace=identity.trace, **extra)


def record_line(record: dict) -> bytes:
    """The exact bytes a record is written as, by replay and the watcher alike; a
    number no JSON can hold is clamped (``sane.jsonable``), never an exception."""
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:   # an integer beyond 64 bits that slipped past the value rules
        return orjson.dumps(jsonable(record)) + b"\n"
