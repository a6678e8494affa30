"""A run's record as it is written: one JSON line, the same bytes from replay and watch."""

from __future__ import annotations

import orjson

from streameval.model import RunIdentity
from streameval.sane import jsonable


def record_line(record: dict) -> bytes:
    """The exact bytes a record is written as, by replay and the watcher alike; a
    number no JSON can hold is clamped (``sane.jsonable``), never an exception."""
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:   # an integer beyond 64 bits that slipped past the value rules
        return orjson.dumps(jsonable(record)) + b"\n"


def error_record(identity: RunIdentity, error: str) -> dict:
    """The record of a run that cannot be scored (docs/metrics.md §5)."""
    rec = {"instance_id": identity.instance_id, "error": error, "run_id": identity.run_id}
    if identity.trace is not None:
        rec["trace"] = identity.trace
    return rec
