"""A trace file as lines: its head (to detect the format), its whole lines, its adapter.

``replay``, ``inspect`` and the watcher read files through here, with the watcher's own
``FileTail`` splitting lines, so every command sees the same lines of the same file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from streameval.traces.formats import adapter_class, detect_format
from streameval.traces.formats.base import Adapter
from streameval.traces.tail import FileTail

HEAD_LINES = 8  # non-empty lines read to detect a trace's format


def read_head(path: Path, n: int = HEAD_LINES, limit: int = 4 << 20) -> list[bytes]:
    """The first ``n`` non-empty lines, for format detection.

    Lines are read whole (a one-line OpenHands instance or compact document can be
    megabytes, and detection parses the line), and reading stops once ``limit``
    bytes are behind, so a file of blank lines is not read to its end.
    """
    head: list[bytes] = []
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                head.append(line.rstrip(b"\r\n"))
            if len(head) >= n or fh.tell() > limit:
                break
    return head


def iter_lines(path: Path, max_bytes: int = 1 << 22) -> Iterable[tuple[bytes | None, int]]:
    """Whole lines of a file with 1-based numbers, a last line without newline included;
    a line longer than the watcher's limit comes as ``(None, lineno)`` (skipped without
    being held in memory). Split by the watcher's own ``FileTail``, so replay and
    watch see the same lines, and linear however long a line is."""
    tail = FileTail(path, watch_rewrites=False)
    while True:
        batch = tail.poll(final=True, max_bytes=max_bytes)
        if batch.status == "missing":
            raise FileNotFoundError(f"{path}: cannot be read")
        yield from batch.ordered()
        if not batch.more:
            return


def open_adapter(path: Path, fmt: str | None = None) -> tuple[str, Adapter]:
    """(format name, adapter instance) for a trace file; raises TraceFormatError."""
    name = fmt or detect_format(read_head(path))
    return name, adapter_class(name)()
