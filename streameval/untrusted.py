"""Text that came from a trace or a request, made safe to show: in a Prometheus label,
in a log line, in an XML document.

Agents write their traces and anyone who reaches the ingest port writes requests, so a
run id may hold an escape sequence that retitles a terminal, a newline that forges a
log line, a right-to-left override, or 100 KB. Each place that shows such a value
shows it through ``bounded``: the characters that are not printable are replaced (how
depends on the place), and a value longer than the place allows keeps its start and a
hash of the whole, so two long values stay apart. Records keep the full values.

- labels: control characters become ``?`` (``live.exporter.label_value``);
- logs: every logged value is escaped as Python's repr writes it (``\\x1b``, ``\\n``,
  ``\\u202e``) and cut, and the line as a whole can hold no control character
  (``SafeFormatter``); refused requests are said a few a period (``LogThrottle``);
- XML (``report.plot``): what XML 1.0 cannot hold at all is escaped the same way.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable

__all__ = ["LOGGED", "LogThrottle", "SafeFormatter", "bounded", "escaped", "log_to_stderr",
           "question"]

#: characters of one logged value (a run id, a path, a request's path) at most
LOGGED = 512
#: characters a cut value ends with: ``~`` and 10 hex digits of its SHA-1
_DIGEST = 11


def question(_ch: str) -> str:
    """A character a label cannot show, as a label shows it."""
    return "?"


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(ch: str) -> str:
    """A character a log line cannot show, as Python's repr writes it (``\\n``,
    ``\\x1b``, ``\\u202e``)."""
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def bounded(value: str, limit: int, mark: Callable[[str], str] = question) -> str:
    """``value`` with each character that is not printable shown by ``mark``; when it
    is longer than ``limit``, its start and ``~`` and a hash of the whole value, at
    most ``limit`` characters. Sane values (the usual case) come back as they are."""
    if len(value) <= limit and value.isprintable():
        return value
    if len(value) <= limit:
        return "".join(ch if ch.isprintable() else mark(ch) for ch in value)
    room = limit - _DIGEST - 1
    kept: list[str] = []
    for ch in value:
        piece = ch if ch.isprintable() else mark(ch)
        room -= len(piece)
        if room < 0:
            break
        kept.append(piece)
    digest = hashlib.sha1(value.encode("utf-8", "replace")).hexdigest()[:10]
    return f"{''.join(kept)}~{digest}"


def _logged(value: object) -> object:
    """One argument of a log call as it may be logged: numbers as they are (``%d``
    takes them), anything else as text, escaped and cut."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    safe = bounded(text, LOGGED, escaped)
    return value if safe is text and not isinstance(value, str) else safe


class SafeFormatter(logging.Formatter):
    """A formatter that writes one line per record, whatever the record's values hold:
    each argument escaped and cut (``bounded``), then every control character left in
    the message escaped (a message given as a value, a ``__str__`` of an argument).
    A traceback keeps its own lines; an exception's message is one line, and the
    control characters in all of it are escaped."""

    def format(self, record: logging.LogRecord) -> str:
        safe = logging.makeLogRecord(record.__dict__)
        safe.exc_text = None   # another handler's, not escaped: made again here
        args = record.args
        if isinstance(args, dict):
            safe.args = {k: _logged(v) for k, v in args.items()}
        elif args:
            safe.args = tuple(_logged(v) for v in args)
        try:
            message = safe.getMessage()
        except (TypeError, ValueError):   # a bad format string: logging's own fallback
            message = f"{record.msg!r} % {record.args!r}"
        safe.msg, safe.args = _one_line(message), None
        return super().format(safe)

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        text = super().formatException(ei)
        # the lines of a traceback are its own, but an exception's message may hold line
        # breaks from a value (``ValueError(f"... {value}")``): that message is one line
        seen: set[int] = set()
        exc = ei[1]
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            only = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
            if "\n" in only:
                text = text.replace(only, only.replace("\n", "\\n"))
            exc = exc.__cause__ or exc.__context__
        return "\n".join(_one_line(line) for line in text.split("\n"))

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return "\n".join(_one_line(line) for line in stack_info.split("\n"))


def log_to_stderr(fmt: str, level: int) -> None:
    """``logging.basicConfig(format=fmt, level=level)`` with a ``SafeFormatter``: as
    basicConfig, nothing is changed when the root logger has handlers already."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter(fmt))
    root.addHandler(handler)
    root.setLevel(level)


def _one_line(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else escaped(ch) for ch in text)


class LogThrottle:
    """Lines of one kind that anyone can make (a refused request each) logged at most
    ``lines`` per ``every`` seconds: the others are counted by ``key`` and said in one
    line once the period is over (at the next line, or at ``flush``, which a ticker
    calls). 2,000 refused requests a second make a dozen lines, not 2,000. Thread-safe."""

    def __init__(self, logger: logging.Logger, what: str, lines: int = 10, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.logger = logger
        self.what = what
        self.lines = lines
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._began = clock()
        self._said = 0
        self._suppressed: Counter = Counter()

    def log(self, level: int, key: object, msg: str, *args: object) -> None:
        """``logger.log(level, msg, *args)`` unless the period's lines are out (then
        counted under ``key``)."""
        with self._lock:
            self._roll(self.clock())
            if self._said >= self.lines:
                self._suppressed[key] += 1
                return
            self._said += 1
        self.logger.log(level, msg, *args)

    def flush(self, now: float | None = None) -> None:
        """Say what was suppressed once its period is over."""
        with self._lock:
            self._roll(self.clock() if now is None else now)

    def _roll(self, now: float) -> None:
        if now - self._began < self.every:
            return
        if self._suppressed:
            total = sum(self._suppressed.values())
            by = ", ".join(f"{k}: {n}" for k, n in sorted(self._suppressed.items(), key=str))
            self.logger.warning("%d more %s not logged in the last %.0f s (%s)", total,
                                self.what, now - self._began, by)
        self._began, self._said, self._suppressed = now, 0, Counter()
