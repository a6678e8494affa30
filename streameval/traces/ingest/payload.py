"""JSON from a pushed request, decoded with a depth limit.

A hook body of ``[`` × 100,000, or a ``tool_input`` nested 5,000 deep, must be a clear
400 that is counted, never a RecursionError deep in the standard library's encoder.
orjson refuses more than 1,024 levels itself; anything deeper than ``MAX_DEPTH`` is
refused here, before a value reaches code that walks it recursively.
"""

from __future__ import annotations

from typing import Any

import orjson

#: levels of arrays and objects a payload may nest (real hook and OTLP payloads: < 15)
MAX_DEPTH = 64


class PayloadError(ValueError):
    """Not JSON, or nested too deep; ``reason`` is the counter's label."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def loads(data: bytes | bytearray | memoryview | str, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data``; PayloadError (``not_json`` or ``too_deep``)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc).lower() or "recursion" in str(exc).lower():
            raise PayloadError(f"JSON nested deeper than the depth limit ({max_depth})", "too_deep") from None
        raise PayloadError(f"not JSON: {exc}", "not_json") from None
    check_depth(value, max_depth)
    return value


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """PayloadError ``too_deep`` when ``value`` nests more than ``max_depth`` levels;
    iterative, so the check itself cannot overflow the stack."""
    if not isinstance(value, (dict, list)):
        return
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise PayloadError(f"JSON nested deeper than the depth limit ({max_depth})", "too_deep")
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)) and child:
                stack.append((child, depth + 1))
            elif isinstance(child, (dict, list)) and depth + 1 > max_depth:
                raise PayloadError(f"JSON nested deeper than the depth limit ({max_depth})", "too_deep")
