"""Trace formats. ``detect_format`` picks the adapter for a file from its first lines.

Each adapter decides on the content of the first lines (``formats.head``): it may skip
bookkeeping lines its agent is known to start a file with, and accept on the first line
that identifies it. When no adapter accepts, the error names what the lines held.

Registry: each entry is (format name, module, class name), imported lazily so that
``import streameval`` stays cheap. ``END_EVENTS`` says which shapes of which formats
always end with an end event.
"""

from __future__ import annotations

import importlib

from streameval.errors import TraceFormatError
from streameval.traces.formats.base import Adapter
from streameval.traces.formats.head import describe

# Order matters: the first adapter whose detect() accepts the head wins.
_REGISTRY: tuple[tuple[str, str, str], ...] = (
    ("unified", "streameval.traces.formats.unified", "UnifiedAdapter"),
    ("claude", "streameval.traces.formats.claude", "ClaudeAdapter"),
    ("codex", "streameval.traces.formats.codex", "CodexAdapter"),
    ("miniswe", "streameval.traces.formats.miniswe", "MiniSweAdapter"),
    ("sweagent", "streameval.traces.formats.sweagent", "SweAgentAdapter"),
    ("sweagent-checkpoints", "streameval.traces.formats.sweagent", "SweAgentCheckpointsAdapter"),
    ("openhands", "streameval.traces.formats.openhands", "OpenHandsAdapter"),
    ("openhands-events", "streameval.traces.formats.openhands", "OpenHandsEventsAdapter"),
    ("openhands-sdk", "streameval.traces.formats.openhands_sdk", "OpenHandsSdkAdapter"),
    ("atif", "streameval.traces.formats.atif", "AtifAdapter"),
    ("gemini", "streameval.traces.formats.gemini", "GeminiAdapter"),
)

FORMATS: tuple[str, ...] = tuple(name for name, _, _ in _REGISTRY)

#: The shapes of a format (``Adapter.shape``) whose every finished trace ends with an end
#: event, and that event (docs/metrics.md §5b, ``no_end_event``): such a trace that ends
#: without it was cut short, at a line's end too, or its agent is still at work or was
#: killed. Shapes that have none are not listed: session transcripts (Claude Code's,
#: Codex's rollouts), which grow for as long as the session lives, and the others.
END_EVENTS: dict[tuple[str, str], str] = {
    ("claude", "stream-json"): "result",
    ("miniswe", "trajectory"): "info.exit_status",
    ("codex", "exec"): "turn.completed",
}


def end_event(adapter: Adapter) -> str | None:
    """The end event the trace an adapter read must end with, when its shape has one."""
    return END_EVENTS.get((adapter.format, adapter.shape or ""))


def adapter_class(name: str) -> type[Adapter]:
    for fmt, module, cls in _REGISTRY:
        if fmt == name:
            return getattr(importlib.import_module(module), cls)
    raise TraceFormatError(f"unknown trace format {name!r}; known formats: {', '.join(FORMATS)}")


def states_context(fmt: str | None) -> bool:
    """``Adapter.states_context`` of a format by name (False for no or an unknown name)."""
    return fmt in FORMATS and adapter_class(fmt).states_context


def detect_format(head: list[bytes]) -> str:
    """Name of the format of a file whose first non-empty lines are ``head``."""
    for fmt, _, _ in _REGISTRY:
        try:
            if adapter_class(fmt).detect(head):
                return fmt
        except Exception:  # noqa: BLE001 - one adapter's bug must not hide the others
            continue
    seen = describe(head)
    raise TraceFormatError(
        "could not detect the trace format from the first lines"
        f"{' (' + seen + ')' if seen else ' (the file has no non-empty line)'}; "
        f"pass --format with one of: {', '.join(FORMATS)}")
