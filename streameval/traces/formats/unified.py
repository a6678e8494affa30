"""ContextBench's unified prediction format: the agent states its own context.

A record is ``{"instance_id", "traj_data": {"pred_steps": [...], "pred_files": [...],
"pred_spans": {...}, "pred_symbols": {...}}, "model_patch": "..."}``; a file holds a JSON
list of records, one JSON object (often pretty-printed) or JSONL. Nothing has to be
inferred from tool calls: each ``pred_steps`` entry already is a step, and
``pred_files``/``pred_spans``/``pred_symbols`` is the stated final context (docs/metrics.md
sections 1 and 4b). Paths stay as written here; resolving them against the repository is
the caller's job (docs/metrics.md §2), since this module knows nothing of repositories.

Two entry points: ``iter_unified_records`` for batch replay (one record per instance,
errors as values so one bad line never stops a file), and ``UnifiedAdapter`` for the
generic adapter pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, StatedContext, Step, TraceEvent
from streameval.traces.formats.base import Adapter

__all__ = ["UnifiedAdapter", "UnifiedError", "UnifiedRecord", "iter_unified_records",
           "parse_unified", "parse_record", "record_events"]

_KEYS = (b'"traj_data"', b'"pred_steps"', b'"pred_files"', b'"pred_spans"')
_ID_KEYS = ("instance_id", "inst_id", "original_inst_id")


@dataclass(slots=True)
class UnifiedRecord:
    """One instance's prediction, paths as written.

    ``final`` is None when the record states no final context (then it is empty, and
    the record ``no_context_extracted``); ``has_steps`` is False when ``pred_steps`` is absent,
    so the caller can apply docs/metrics.md §4b (the final context becomes the one step).
    """

    instance_id: str
    steps: list[Step] = field(default_factory=list)
    final: Step | None = None
    has_steps: bool = True
    patch: str | None = None
    position: str = ""


@dataclass(slots=True)
class UnifiedError:
    """A record (or a whole file) that could not be read; ``reason`` is a Reason value."""

    instance_id: str | None
    reason: str
    message: str
    position: str = ""
    lineno: int = 0  # line of a JSONL file (0 for a JSON document)


# --------------------------------------------------------------------------- parsing


def _ranges(value: Any) -> list[tuple[int, int]]:
    """``[{"start": a, "end": b}, ...]`` (or ``[a, b]`` pairs) -> line ranges.

    ``start > end`` is read as ``[end, start]`` (docs/metrics.md §4b); anything that is not
    a pair of integers is dropped rather than guessed at.
    """
    out: list[tuple[int, int]] = []
    for item in value if isinstance(value, list) else ():
        if type(item) is dict:   # the usual {"start": a, "end": b} of two plain ints
            a = item.get("start")
            b = item.get("end")
            if type(a) is int and type(b) is int:   # (bool is not: type(True) is bool)
                out.append((a, b) if a <= b else (b, a))
                continue
        if isinstance(item, dict):
            a = item["start"] if "start" in item else item.get("start_line")
            b = item["end"] if "end" in item else item.get("end_line")
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            a, b = item
        else:
            continue
        # (a plain int first: JSON's integers are, and bool is an int of its own type)
        if not ((type(a) is int or _is_int(a)) and (type(b) is int or _is_int(b))):
            continue
        out.append((a, b) if a <= b else (b, a))
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _step(files: Any, spans: Any, symbols: Any) -> Step:
    file_list = tuple([f for f in files if isinstance(f, str)]) if isinstance(files, list) else ()
    span_map: dict[str, list[tuple[int, int]]] = {}
    if isinstance(spans, dict):
        for path, ranges in spans.items():   # (a dict's paths are distinct)
            if isinstance(path, str):
                span_map[path] = _ranges(ranges)
    symbol_map: dict[str, list[str]] | None = None
    if isinstance(symbols, dict):
        symbol_map = {path: [n for n in names if isinstance(n, str)]
                      for path, names in symbols.items()
                      if isinstance(path, str) and isinstance(names, list)}
    return Step(files=file_list, spans=span_map, symbols=symbol_map)


def _traj(obj: dict[str, Any]) -> dict[str, Any]:
    data = obj.get("traj_data", obj)
    if isinstance(data, (str, bytes)):  # some exports store traj_data JSON-encoded
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError:
            return {}
    return data if isinstance(data, dict) else {}


def parse_record(obj: Any, position: str = "") -> UnifiedRecord | UnifiedError:
    """One decoded JSON value -> a record, or an error that says what is wrong."""
    if not isinstance(obj, dict):
        return UnifiedError(None, Reason.NOT_AN_OBJECT.value,
                            f"{position}: expected a JSON object, got {type(obj).__name__}",
                            position)
    iid = next((obj[k] for k in _ID_KEYS if isinstance(obj.get(k), str) and obj[k]), None)
    if iid is None:
        return UnifiedError(None, Reason.MISSING_FIELD.value,
                            f"{position}: record has no instance_id", position)
    traj = _traj(obj)
    raw_steps = traj.get("pred_steps")
    steps = [_step(s.get("files"), s.get("spans"), s.get("symbols"))
             for s in raw_steps if isinstance(s, dict)] if isinstance(raw_steps, list) else []
    final = None
    if any(k in traj for k in ("pred_files", "pred_spans", "pred_symbols")):
        final = _step(traj.get("pred_files"), traj.get("pred_spans"), traj.get("pred_symbols"))
    patch = obj.get("model_patch", traj.get("model_patch"))
    # An empty pred_steps list is no steps (the public evaluator tests truthiness).
    return UnifiedRecord(instance_id=iid, steps=steps, final=final,
                         has_steps=isinstance(raw_steps, list) and bool(raw_steps),
                         patch=patch if isinstance(patch, str) and patch.strip() else None,
                         position=position)


def _looks_like_document(data: bytes) -> bool:
    """A JSON list, or one object spread over several lines (pretty-printed)."""
    stripped = data.lstrip()
    if stripped.startswith(b"["):
        return True
    first = stripped.split(b"\n", 1)[0].strip()
    return first == b"{" or (stripped.startswith(b"{") and b"\n" not in stripped.rstrip())


def parse_unified(data: bytes, name: str = "<input>") -> Iterator[UnifiedRecord | UnifiedError]:
    """Every record of one file's bytes, in file order; errors are yielded, not raised."""
    if _looks_like_document(data):
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            yield UnifiedError(None, Reason.MALFORMED_JSON.value,
                               f"{name}: not valid JSON ({e})", name)
            return
        items = doc if isinstance(doc, list) else [doc]
        for i, obj in enumerate(items):
            yield parse_record(obj, f"{name} item {i + 1}" if isinstance(doc, list) else name)
        return
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            yield UnifiedError(None, Reason.MALFORMED_JSON.value,
                               f"{where}: not valid JSON ({e})", where, lineno)
            continue
        item = parse_record(obj, where)
        if isinstance(item, UnifiedError):
            item.lineno = lineno
        yield item


def iter_unified_records(path: str | Path) -> Iterator[UnifiedRecord | UnifiedError]:
    """Records of a unified prediction file (JSON list, one object, or JSONL)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        yield UnifiedError(None, Reason.UNREADABLE_PREDICTION.value,
                           f"cannot read prediction file {path}: {e.strerror or e}", str(path))
        return
    yield from parse_unified(data, str(path))


# --------------------------------------------------------------------------- adapter


class UnifiedAdapter(Adapter):
    """Unified predictions as trace events (a document: parsed whole at ``close``).

    Per record: ``RunInfo(instance_id)``, one ``StatedContext`` per ``pred_steps`` entry
    (or the final context as the one step when there are none, docs/metrics.md §4b), a
    ``StatedContext(final=True)`` when the record states a final context, ``RunEnd``.
    """

    format = "unified"
    document = True
    states_context = True

    def __init__(self) -> None:
        self._lines: list[bytes] = []
        self._first_lineno = 0

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        """A JSON line or document whose first lines carry unified keys.

        ``head`` may be the start of a pretty-printed document, so no line is required
        to parse on its own.
        """
        first = head[0].strip() if head else b""
        if first.startswith(b"{") and first.endswith(b"}"):
            try:  # a whole JSON line: judge by its top-level keys, not by its text
                obj = orjson.loads(first)
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                return any(k in obj for k in ("traj_data", "pred_steps", "pred_files"))
        text = b"\n".join(head).lstrip()
        return text[:1] in (b"{", b"[") and any(k in text for k in _KEYS)

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        if not self._lines:
            self._first_lineno = lineno
        self._lines.append(line)
        return []

    def close(self) -> list[TraceEvent]:
        data, self._lines = b"\n".join(self._lines), []
        events: list[TraceEvent] = []
        for item in parse_unified(data, "trace"):
            if isinstance(item, UnifiedError):
                lineno = self._first_lineno + max(item.lineno - 1, 0)
                events.append(BadLine(lineno, item.reason, item.message))
                continue
            events.extend(record_events(item))
        return events


def record_events(item: UnifiedRecord) -> list[TraceEvent]:
    """One record as trace events, for the session engine (replay and watch alike):
    ``RunInfo(instance_id)``, a ``StatedContext`` per step (without ``pred_steps`` the
    final context is the one step, docs/metrics.md §4b), the stated final context, ``RunEnd``."""
    events: list[TraceEvent] = [RunInfo(instance_id=item.instance_id)]
    events.extend(StatedContext(step) for step in item.steps)
    if not item.has_steps:
        events.append(StatedContext(item.final or Step()))
    # the final context is what pred_files/pred_spans/pred_symbols state, nothing when
    # absent (the evaluator's rule: docs/metrics.md §4b)
    events.append(StatedContext(item.final or Step(), final=True))
    events.append(RunEnd(reason="end", patch=item.patch))
    return events
