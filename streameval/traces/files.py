"""A trace as lines: its head (to detect the format), its whole lines, its adapter.

``replay``, ``inspect`` and the watcher read traces through here, with the watcher's own
tail splitting lines, so every command sees the same lines of the same trace. A trace is
a file, or an OpenHands SDK conversation directory (``traces.eventdir``: one line per
event file); ``open_tail`` picks the tail that reads it.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from pathlib import Path

from streameval.traces.eventdir import DirectoryTail, one_line
from streameval.traces.formats import adapter_class, detect_format
from streameval.traces.formats.base import Adapter
from streameval.traces.parts import event_files, is_conversation
from streameval.traces.tail import DEFAULT_MAX_LINE, Admit, FileTail

HEAD_LINES = 8  # non-empty lines read to detect a trace's format


def read_head(path: Path, n: int = HEAD_LINES, limit: int = 4 << 20) -> list[bytes]:
    """The first ``n`` non-empty lines, for format detection.

    Lines are read whole (a one-line OpenHands instance or compact document can be
    megabytes, and detection parses the line), and reading stops once ``limit``
    bytes are behind, so a file of blank lines is not read to its end.
    """
    head: list[bytes] = []
    if Path(path).is_dir():
        return _conversation_head(Path(path), n, limit)
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                head.append(line.rstrip(b"\r\n"))
            if len(head) >= n or fh.tell() > limit:
                break
    return head


def _conversation_head(path: Path, n: int, limit: int) -> list[bytes]:
    """The first ``n`` events of a conversation directory, one line each (as
    ``DirectoryTail`` gives them); any other directory is no trace."""
    if not is_conversation(path):
        raise IsADirectoryError(errno.EISDIR, "a directory, and not an OpenHands SDK "
                                "conversation (no events/event-*.json)", str(path))
    head: list[bytes] = []
    for f in event_files(path):
        if f.stat().st_size > limit:
            break
        line = one_line(f.read_bytes())
        if line:
            head.append(line)
        if len(head) >= n:
            break
    return head


def open_tail(path: Path, max_line: int = DEFAULT_MAX_LINE, watch_rewrites: bool = True,
              admit: Admit | None = None) -> FileTail | DirectoryTail:
    """The tail that reads a trace: a conversation directory's, or a file's (``admit``:
    asked of every file it opens, ``tail.Admit``)."""
    if Path(path).is_dir() and is_conversation(Path(path)):
        return DirectoryTail(path, max_line=max_line, watch_rewrites=watch_rewrites, admit=admit)
    return FileTail(path, max_line=max_line, watch_rewrites=watch_rewrites, admit=admit)


def iter_lines(path: Path, max_bytes: int = 1 << 22) -> Iterable[tuple[bytes | None, int]]:
    """Whole lines of a file with 1-based numbers, a last line without newline included;
    a line longer than the watcher's limit comes as ``(None, lineno)`` (skipped without
    being held in memory). Split by the watcher's own ``FileTail``, so replay and
    watch see the same lines, and linear however long a line is."""
    for line, lineno, _cut in iter_marked_lines(path, max_bytes):
        yield line, lineno


def iter_marked_lines(path: Path, max_bytes: int = 1 << 22
                      ) -> Iterable[tuple[bytes | None, int, bool]]:
    """``iter_lines``, each line marked True when it is the last and the file ends
    without its newline: a JSON line there that does not parse was cut short
    (``TraceReader.feed_line``), which replay and a watched run's end both tell."""
    tail = open_tail(path, watch_rewrites=False)
    while True:
        batch = tail.poll(final=True, max_bytes=max_bytes)
        if batch.status == "missing":
            raise FileNotFoundError(f"{path}: cannot be read")
        for line, lineno in batch.ordered():
            yield line, lineno, lineno == batch.cut
        if not batch.more:
            return


def open_adapter(path: Path, fmt: str | None = None) -> tuple[str, Adapter]:
    """(format name, adapter instance) for a trace file; raises TraceFormatError."""
    name = fmt or detect_format(read_head(path))
    return name, adapter_class(name)()
