"""How a whole-document trace grew: the saves an agent made of it, one step at a time.

mini-swe-agent and SWE-agent write their trajectory as one JSON document and save it
again after every step, without an exit status until the run is over. A recorded
document is the last save; re-enacting it line by line would show nothing until its
last byte (the watcher reads a document whole). The saves are made again here: the
lists that grow as the agent works, cut to their first k entries, and without the
fields only the last save has. Only the formats whose growth is known are re-enacted
so; any other document is written whole, once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

__all__ = ["GROWTH", "Growth", "saves"]


@dataclass(frozen=True, slots=True)
class Growth:
    """``lists``: the top-level lists that grow, the first one step by step (the others
    in proportion); ``final``: (object, key) fields written only by the last save."""

    lists: tuple[str, ...]
    final: tuple[tuple[str, str], ...]


#: format -> how its documents grow
GROWTH: dict[str, Growth] = {
    "miniswe": Growth(("messages",), (("info", "exit_status"), ("info", "submission"))),
    "sweagent": Growth(("trajectory", "history"), (("info", "exit_status"), ("info", "submission"))),
}


def _save(doc: dict, growth: Growth, k: int, n: int) -> dict:
    out = dict(doc)
    for i, key in enumerate(growth.lists):
        items = doc.get(key)
        if isinstance(items, list):
            keep = k if i == 0 else -(-len(items) * k // n)
            out[key] = items[:keep]
    for outer, key in growth.final:
        inner = out.get(outer)
        if isinstance(inner, dict) and key in inner:
            out[outer] = {k2: v for k2, v in inner.items() if k2 != key}
    return out


def saves(data: bytes, fmt: str) -> Iterator[bytes] | None:
    """The successive saves of a recorded document (the last one is the file as it is),
    or None when the format's growth is not known or the document is not an object."""
    growth = GROWTH.get(fmt)
    if growth is None:
        return None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    first = doc.get(growth.lists[0]) if isinstance(doc, dict) else None
    if not isinstance(first, list) or not first:
        return None
    n = len(first)

    def each() -> Iterator[bytes]:
        for k in range(1, n):
            yield orjson.dumps(_save(doc, growth, k, n), option=orjson.OPT_INDENT_2) + b"\n"
        yield data   # the last save: the recorded bytes themselves

    return each()
