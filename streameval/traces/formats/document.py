"""Whole-document trace formats (pretty-printed ``.traj`` JSON): buffered, parsed once.

Such files are rewritten by their agents rather than appended to, so their lines mean
nothing one by one: the adapter keeps them (bounded) and parses the document when the
input ends. The live watcher re-reads such files whole when they change.
"""

from __future__ import annotations

import json
from typing import ClassVar

import orjson

from streameval.errors import Reason
from streameval.model import BadLine, TraceEvent
from streameval.traces.formats.base import Adapter

#: the largest document a trace may be before it is given up (one BadLine)
MAX_DOCUMENT_BYTES = 256 << 20
_SNIPPET = 200


class DocumentBuffer:
    """The lines of a whole-document trace, kept until ``close`` and then parsed once.

    Bounded: past ``limit`` bytes the document is given up with one ``LINE_TOO_LONG``
    BadLine and the rest is dropped unread. A JSON error at the very end of the text
    (a file still being written, or cut short) is ``PARTIAL_LINE``; elsewhere it is
    ``MALFORMED_JSON``. Bytes that are not UTF-8 are replaced (U+FFFD) and counted as
    ``NOT_UTF8`` once, rather than losing the whole run to one bad byte.
    """

    def __init__(self, limit: int = MAX_DOCUMENT_BYTES):
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.first_lineno: int | None = None
        self.last_lineno = 0
        self.overflow = False

    def add(self, line: bytes, lineno: int) -> list[TraceEvent]:
        if self.overflow:
            return []
        if self.first_lineno is None:
            if not line.strip():
                return []
            self.first_lineno = lineno
        self.last_lineno = lineno
        self.size += len(line) + 1
        if self.size > self.limit:
            self.overflow = True
            self.parts = []
            return [BadLine(lineno, Reason.LINE_TOO_LONG.value,
                            f"document reaches {self.size} bytes by line {lineno} "
                            f"(limit {self.limit}); given up")]
        self.parts.append(line)
        return []

    def load(self, kinds: tuple[type, ...] = (dict,)) -> tuple[dict | list | None,
                                                             list[TraceEvent]]:
        """The document's top-level value (None if unusable: not of ``kinds``) and any
        BadLines."""
        if self.overflow or self.first_lineno is None:
            return None, []
        data = b"\n".join(self.parts)
        self.parts = []
        bad: list[TraceEvent] = []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", "replace")
            bad.append(BadLine(self._line_at(data[:exc.start].count(b"\n")),
                               Reason.NOT_UTF8.value,
                               f"document has bytes that are not UTF-8 (byte {exc.start}); "
                               "replaced with U+FFFD"))
        try:
            obj = orjson.loads(text)
        except ValueError:
            bad.append(self._json_error(text))
            return None, bad
        if not isinstance(obj, kinds):
            want = " or ".join("an object" if k is dict else "an array" for k in kinds)
            bad.append(BadLine(self.first_lineno, Reason.NOT_AN_OBJECT.value,
                               f"document is a JSON {type(obj).__name__}, not {want}"))
            return None, bad
        return obj, bad

    def _line_at(self, newlines_before: int) -> int:
        return (self.first_lineno or 1) + newlines_before

    def _json_error(self, text: str) -> BadLine:
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            end = len(text.rstrip())
            truncated = exc.pos >= end - 1 or exc.msg.startswith("Unterminated string")
            reason = Reason.PARTIAL_LINE if truncated else Reason.MALFORMED_JSON
            what = "ends before the JSON document does" if truncated else "is not valid JSON"
            return BadLine(self._line_at(exc.lineno - 1), reason.value,
                           f"document (lines {self.first_lineno}-{self.last_lineno}) {what}: "
                           f"{exc.msg} at line {self._line_at(exc.lineno - 1)} column {exc.colno}")
        except (ValueError, RecursionError) as exc:
            return BadLine(self.first_lineno or 0, Reason.MALFORMED_JSON.value,
                           f"document is not valid JSON: {exc}")
        # orjson refused what json accepts (e.g. NaN, deep nesting): same damage class
        return BadLine(self.first_lineno or 0, Reason.MALFORMED_JSON.value,
                       "document is not strict JSON (NaN/Infinity or nesting too deep)")


class DocumentAdapter(Adapter):
    """An adapter whose input is one JSON object spread over many lines.

    ``feed`` buffers, ``close`` parses with ``parse(doc, lineno)``; a document of an
    unexpected shape becomes one counted BadLine, never an exception.
    """

    document: ClassVar[bool] = True
    #: how BadLine messages name the format
    label: ClassVar[str] = "document"
    #: what the top-level JSON value may be
    kinds: ClassVar[tuple[type, ...]] = (dict,)

    def __init__(self) -> None:
        self.buffer = DocumentBuffer()

    def parse(self, doc, lineno: int) -> list[TraceEvent]:
        raise NotImplementedError

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        return self.buffer.add(line, lineno)

    def close(self) -> list[TraceEvent]:
        # a fresh buffer, so the same adapter can read the rewritten document again
        buffer, self.buffer = self.buffer, DocumentBuffer(self.buffer.limit)
        doc, events = buffer.load(self.kinds)
        if doc is None:
            return events
        lineno = buffer.first_lineno or 0
        try:
            events.extend(self.parse(doc, lineno))
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
            events.append(BadLine(lineno, Reason.MISSING_FIELD.value,
                                  f"{self.label} document has an unexpected shape: "
                                  f"{type(exc).__name__}: {str(exc)[:_SNIPPET]}"))
        return events
