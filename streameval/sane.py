"""Numbers taken from traces, kept inside ranges no real run leaves.

A trace is written by an agent, a harness or an attacker; any number in it may be
absurd (``"input_tokens": 1e20``, a hunk of a billion lines, a pid of 2**40). Each
such value is brought into its range here, or dropped, and counted by reason into the
counter the caller installed with ``counting`` (the watcher's statistics, exported as
``streameval_clamped_values_total{reason}``), so one value can neither stop a stream nor
make a record that cannot be written. The bounds are far beyond any real run: clamping
never changes the numbers of a sane trace.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: tokens, lines read, sizes: a quadrillion is beyond any run (and fits in 64 bits)
MAX_COUNT = 10**15
#: a line number: no source file has a billion lines
MAX_LINE = 10**9
#: dollars one run can cost
MAX_COST = 1e9
#: epoch seconds: up to the year 5138 (larger numbers are taken as milliseconds first)
MAX_EPOCH = 1e11
#: process ids (Linux's pid_max is at most 2**22)
MAX_PID = 1 << 22
#: what a record's integers must fit in to be written as JSON (orjson: int64 or uint64)
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1

#: where values clamped or dropped are counted, by reason, in the running context
_SINK: ContextVar[Counter[str] | None] = ContextVar("streameval_clamped", default=None)


@contextmanager
def counting(into: Counter[str]) -> Iterator[Counter[str]]:
    """Count what is clamped while the block runs into ``into`` (by reason): the
    watcher's statistics own the counter, a test its own."""
    token = _SINK.set(into)
    try:
        yield into
    finally:
        _SINK.reset(token)


def clamped(reason: str) -> None:
    """Count one value of ``reason`` brought into range (or dropped)."""
    sink = _SINK.get()
    if sink is not None:
        sink[reason] += 1


def count(value: Any, reason: str = "count") -> int:
    """A non-negative count (numeric strings accepted); absurd ones clamped, junk 0."""
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value    # the usual count, as it is (not a bool: its type is bool)
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        if not math.isfinite(value):
            clamped(reason)
            return 0
        value = int(value)
    elif isinstance(value, str):
        text = value.strip()
        # isdecimal, not isdigit: isdigit also accepts '²', which int() refuses
        if not text.isdecimal() or len(text) > 30:
            return 0
        value = int(text)
    if not isinstance(value, int):
        return 0
    if value > MAX_COUNT:
        clamped(reason)
        return MAX_COUNT
    return max(value, 0)


def cost(value: Any) -> float | None:
    """Dollars: a finite number in [0, MAX_COST], else None (unknown)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    number = float(value) if abs(value) < 1e300 else math.inf
    if not math.isfinite(number) or not 0 <= number <= MAX_COST:
        clamped("cost")
        return None
    return number


def epoch(seconds: float) -> float | None:
    """Epoch seconds in [0, MAX_EPOCH], else None (the time-based extras go unknown)."""
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_EPOCH:
        clamped("timestamp")
        return None
    return seconds


def line(n: int) -> int:
    """A line number, at most MAX_LINE."""
    if n > MAX_LINE:
        clamped("line_number")
        return MAX_LINE
    return n


def pid(value: Any) -> int | None:
    """A process id that can name a process: 1 < pid <= MAX_PID, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 < value <= MAX_PID:
        return value
    if value is not None:
        clamped("pid")
    return None


def jsonable(value: Any) -> Any:
    """``value`` with every integer beyond 64 bits clamped and every non-finite float
    None: what a record becomes when a number slipped past the rules above, so it can
    always be written (docs/metrics.md §5)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            clamped("record")
            return _INT_MAX if value > 0 else _INT_MIN
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            clamped("record")
            return None
        return value
    return str(value)
