"""What the first lines of a file hold, for deciding its format by content.

Detection looks at the first few non-empty lines (``traces.files.read_head``), not at the
first one alone: a transcript may open with bookkeeping lines that say nothing about the
agent (Claude Code's ``custom-title``, ``permission-mode``, ``teleported-from``), and the
line that names the format comes after them. Adapters decide on the objects this module
decodes; when none accepts the head, ``describe`` says what was seen, so the error tells
the user what the file looked like instead of only that it was not recognised.
"""

from __future__ import annotations

import orjson

__all__ = ["head_objects", "describe"]

_BOM = b"\xef\xbb\xbf"
#: how many lines, keys and characters the description names
_LINES, _KEYS, _TEXT = 3, 6, 40


def _decode(line: bytes) -> object:
    try:
        return orjson.loads(line[len(_BOM):] if line.startswith(_BOM) else line)
    except ValueError:
        return None


def head_objects(head: list[bytes], limit: int = 8) -> list[dict]:
    """The JSON objects among the first ``limit`` lines of the head, in order (a line
    that is not one is left out: a byte-order mark is not held against the first)."""
    return [obj for obj in map(_decode, head[:limit]) if isinstance(obj, dict)]


def _one(line: bytes) -> str:
    obj = _decode(line)
    if isinstance(obj, dict):
        kind = next((f"{k}={obj[k]!r}" for k in ("type", "kind", "role")
                     if isinstance(obj.get(k), str)), None)
        keys = ", ".join(list(obj)[:_KEYS]) + (", ..." if len(obj) > _KEYS else "")
        return f"an object ({kind + '; ' if kind else ''}keys {keys or 'none'})"
    if isinstance(obj, list):
        first = next((x for x in obj if isinstance(x, dict)), None)
        inner = f" of objects with keys {', '.join(list(first)[:_KEYS])}" if first else ""
        return f"a JSON array{inner}"
    if obj is not None:
        return f"a JSON {type(obj).__name__}"
    text = line[:_TEXT].decode("utf-8", "replace")
    return f"text {text!r}" + ("..." if len(line) > _TEXT else "")


def describe(head: list[bytes]) -> str:
    """What the first lines are, in a few words each: ``line 1: an object (type='x';
    keys a, b)``. Empty when the file has no non-empty line."""
    return "; ".join(f"line {n}: {_one(line)}" for n, line in enumerate(head[:_LINES], 1))
