"""Shared plumbing of the JSONL adapters: one line in, one JSON object (or a BadLine) out.

Every JSONL format fails the same ways (a half-written last line, a line cut by a log
wrapper, bytes that are not UTF-8, a runaway multi-megabyte line), and each failure must
become a counted ``errors.Reason`` rather than an exception (DESIGN.md, "Bad input never
stops the stream"). Keeping that in one place gives every adapter the same reasons for
the same damage, and one orjson call per line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, ClassVar

import orjson

from streameval import sane
from streameval.errors import Reason
from streameval.model import BadLine, TokenUsage, ToolCall, TraceEvent
from streameval.traces.formats.base import Adapter

#: Longer lines are refused unparsed: a real event line is at most a few MB (a whole
#: file's content in a Read result); past this we are looking at corruption.
MAX_LINE_BYTES = 32 * 1024 * 1024

#: How much of a bad line goes into the BadLine message (enough to find it, no more).
_SNIPPET = 80


def decode_object(line: bytes, lineno: int, max_bytes: int = MAX_LINE_BYTES) -> dict | BadLine | None:
    """The JSON object on ``line``; a BadLine saying why not; None for a blank line.

    Blank lines are not events and not damage either (trailing newline, editors), so
    they yield nothing rather than a counted error.
    """
    if len(line) > max_bytes:
        return BadLine(lineno, Reason.LINE_TOO_LONG.value,
                       f"line {lineno} is {len(line)} bytes (limit {max_bytes}); skipped")
    try:
        obj = orjson.loads(line)
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
        return _decode_failure(line, lineno, exc)
    if isinstance(obj, dict):
        return obj
    return BadLine(lineno, Reason.NOT_AN_OBJECT.value,
                   f"line {lineno} is a JSON {type(obj).__name__}, not an object")


def _decode_failure(line: bytes, lineno: int, exc: Exception) -> BadLine | None:
    if not line.strip():
        return None
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as uexc:
        return BadLine(lineno, Reason.NOT_UTF8.value,
                       f"line {lineno} is not UTF-8 (byte {uexc.start}); skipped")
    snippet = line[:_SNIPPET].decode("utf-8", "replace")
    return BadLine(lineno, Reason.MALFORMED_JSON.value,
                   f"line {lineno} is not valid JSON ({exc}): {snippet!r}")


def first_object(head: list[bytes], limit: int = 5) -> dict | None:
    """The first of ``head``'s lines that decodes to a JSON object (for ``detect``)."""
    for line in head[:limit]:
        obj = decode_object(line, 0)
        if isinstance(obj, dict):
            return obj
    return None


# --------------------------------------------------------------------------- values


def parse_timestamp(value: Any) -> float | None:
    """Epoch seconds of an ISO-8601 string (``...Z`` or with offset) or a number.

    Naive ISO strings are taken as UTC (the agents write UTC). Numbers above 1e11
    are taken as milliseconds. Anything unusable is None, never an error: a missing
    timestamp only costs the time-based extras.
    """
    if value is None:
        return None    # (the usual case of a stream-json line: no time on it)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            when = datetime.fromisoformat(text)
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
            return sane.epoch(when.timestamp())
        except (ValueError, OverflowError):
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value) if abs(value) < 1e300 else math.inf
        if math.isfinite(number) and number > sane.MAX_EPOCH:
            number /= 1000.0   # milliseconds
        return sane.epoch(number)
    return None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_dict(value: Any) -> dict:
    """``value`` if it is a dict, else an empty one (wrong types are treated as absent)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def as_count(value: Any) -> int:
    """A token count: a non-negative int (numeric strings accepted), else 0; absurd
    ones clamped (``sane.count``)."""
    return sane.count(value, "tokens")


def as_cost(value: Any) -> float | None:
    """A dollar amount (``sane.cost``), else None (unknown)."""
    return sane.cost(value)


def token_usage(input_tokens: Any = 0, output_tokens: Any = 0,
                cache_read: Any = 0, cache_creation: Any = 0) -> TokenUsage:
    count = sane.count   # as_count, without a call of its own: four per message line
    return TokenUsage(count(input_tokens, "tokens"), count(output_tokens, "tokens"),
                      count(cache_read, "tokens"), count(cache_creation, "tokens"))


# --------------------------------------------------------------------------- shared by adapters
# (JSONL and whole-document alike: mini-swe-agent, SWE-agent, OpenHands)


def shell_failed(returncode: int | None, output: str | None) -> bool:
    """Whether a shell result showed nothing usable (docs/metrics.md §6: failed calls read nothing).

    A plain non-zero exit is not enough: ``grep`` exits 1 when nothing matched and a
    failing test run exits 1 after printing plenty. So: any exit code other than 0 and 1
    (usage errors, ``ls``/``sed``/``grep`` on a missing path exit 2, kills are negative),
    or exit 1 with "No such file or directory" in the output (``cat``/``head``/``nl`` of
    a missing file).
    """
    if returncode is None or returncode == 0:
        return False
    if returncode != 1:
        return True
    return "No such file or directory" in (output or "")


def looks_like_diff(text: Any) -> bool:
    """True for a non-empty unified diff (a submission can also be an error message)."""
    if not isinstance(text, str) or not text.strip():
        return False
    head = text.lstrip()[:2000]
    return head.startswith(("diff --git", "--- ", "Index: ")) or "\ndiff --git " in head


def head_text(head: list[bytes], limit: int = 8) -> str:
    """The first lines of a file as text, for ``detect`` (bad bytes replaced)."""
    return "\n".join(line.decode("utf-8", "replace") for line in head[:limit])


def never_answered(pending: dict[str, ToolCall]) -> list[TraceEvent]:
    """Calls that never got a result, in the order they were made: ``interrupted``, so
    they show nothing (the run ended, or was cut, before the answer). Empties ``pending``."""
    calls: list[TraceEvent] = []
    for call in pending.values():
        call.interrupted = True
        calls.append(call)
    pending.clear()
    return calls


def bad_shape(lineno: int, what: str, exc: Exception | None = None) -> BadLine:
    """The BadLine for a well-formed JSON line whose fields are not what the format says."""
    detail = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return BadLine(lineno, Reason.MISSING_FIELD.value, f"line {lineno}: {what}{detail}")


def unread_action(lineno: int, what: str) -> BadLine:
    """An action the trace holds (a tool call, a command) that the adapter recognised as
    one and could not turn into a ``ToolCall``: counted, and a run whose every action is
    such is an error record, never a run that read nothing (``no_calls_read``,
    docs/metrics.md §5b)."""
    return BadLine(lineno, Reason.UNREAD_ACTION.value, f"line {lineno}: {what}")


def unknown_event(lineno: int, kind: Any) -> BadLine:
    return BadLine(lineno, Reason.UNKNOWN_EVENT.value,
                   f"line {lineno}: unknown event type {str(kind)[:_SNIPPET]!r}; skipped")


class TypedJsonlAdapter(Adapter):
    """A JSON-lines format whose lines say what they are in a ``type`` field.

    Subclasses name a handler per type (``handlers``), the types that carry nothing
    for us (``ignored_types``), and may map other types in ``fallback_handler``.
    Decoding failures and unknown types become counted BadLines; a handler that
    trips over an unexpected shape becomes one too (a trace is untrusted input).
    Calls waiting for their results live in ``_pending`` and are flushed by ``close``.
    """

    handlers: ClassVar[dict[str, Callable[..., list[TraceEvent]]]] = {}
    ignored_types: ClassVar[frozenset[str]] = frozenset()
    #: line types that say which shape of the format the trace is (``Adapter.shape``):
    #: the first such line decides
    shapes: ClassVar[dict[str, str]] = {}

    def __init__(self) -> None:
        self._pending: dict[str, ToolCall] = {}

    def fallback_handler(self, kind: str) -> Callable[..., list[TraceEvent]] | None:
        return None

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        obj = decode_object(line, lineno)
        if not isinstance(obj, dict):
            return [] if obj is None else [obj]
        kind = obj.get("type")
        if not isinstance(kind, str):
            return [unknown_event(lineno, kind)]
        if self.shape is None:
            self.shape = self.shapes.get(kind)
        handler = self.handlers.get(kind)
        if handler is None:
            if kind in self.ignored_types:
                return []
            handler = self.fallback_handler(kind)
            if handler is None:
                return [unknown_event(lineno, kind)]
        try:
            return handler(self, obj, lineno)
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            return [bad_shape(lineno, f"unexpected shape of a {kind!r} line", exc)]

    def close(self) -> list[TraceEvent]:
        return self._flush_pending()

    def _flush_pending(self) -> list[TraceEvent]:
        return never_answered(self._pending)
