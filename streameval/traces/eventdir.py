"""An OpenHands SDK conversation directory read as the lines of one trace.

The SDK persists a conversation as one JSON file per event, named in the order written
(``events/event-00000-<uuid>.json``, ``event-00001-...``). ``DirectoryTail`` reads such a
directory the way ``tail.FileTail`` reads a file: every event file not read yet becomes
one line (its JSON on one line: a pretty-printed file's line breaks are whitespace
between tokens, so they become blanks), numbered in file order. So replay, ``inspect``
and ``watch`` read a conversation with the adapter of the SDK's JSON-lines events, and a
conversation growing event by event is one run growing line by line.

The last event file may be caught half-written: it is held back until it parses (or
until ``final``), as a file's unfinished last line is. A directory whose files read so
far are no longer its first files was rewritten (``rewritten``), one with fewer files
was cut (``truncated``), one with a new inode replaced (``replaced``): the caller starts
over, as with a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from streameval.traces.parts import event_files
from streameval.traces.tail import DEFAULT_MAX_LINE, Admit, TailBatch, read_regular

__all__ = ["DirectoryTail"]


def one_line(data: bytes) -> bytes:
    """A JSON document on one line: its raw line breaks can only be whitespace."""
    return data.replace(b"\r", b" ").replace(b"\n", b" ").strip()


class DirectoryTail:
    """Incremental reader of a conversation directory; same interface as ``FileTail``."""

    def __init__(self, path: str | os.PathLike, max_line: int = DEFAULT_MAX_LINE,
                 watch_rewrites: bool = True, admit: Admit | None = None):
        self.path = os.fspath(path)
        self.max_line = max_line
        #: asked of each event file opened (``tail.Admit``): one refused is passed over
        self.admit = admit
        self.watch_rewrites = watch_rewrites   # kept for FileTail's signature
        self.inode: int | None = None
        self.offset = 0          # bytes of the event files consumed (a held one included)
        self.lineno = 0          # event files consumed
        self.size_seen = 0       # bytes of all event files at the last poll
        self._names: list[str] = []
        self._held = 0           # size of the last file, held back while half-written

    # ------------------------------------------------------------------ state
    def position(self) -> dict:
        return {"inode": self.inode, "offset": self.offset - self._held, "lineno": self.lineno}

    def reset(self) -> None:
        self.inode = None
        self.offset = 0
        self.lineno = 0
        self._names = []
        self._held = 0

    @property
    def backlog(self) -> int:
        return max(0, self.size_seen - self.offset)

    @property
    def pending(self) -> int:
        return self._held

    def _status(self, inode: int, names: list[str]) -> str:
        """How the directory stands against what was read: another directory under the
        name, fewer event files, or other files where the read ones were."""
        if self.inode is not None and inode != self.inode:
            return "replaced"
        if len(names) < len(self._names):
            return "truncated"
        if names[:len(self._names)] != self._names:
            return "rewritten"
        return "ok"

    # ------------------------------------------------------------------ reading
    def poll(self, final: bool = False, max_bytes: int | None = None) -> TailBatch:
        """The event files written since the last poll, one line each."""
        batch = TailBatch()
        try:
            st = os.stat(self.path)
        except OSError:
            batch.status = "missing"
            return batch
        files = event_files(Path(self.path))
        batch.status = self._status(st.st_ino, [f.name for f in files])
        if batch.status != "ok":
            self.reset()
        self.inode = st.st_ino
        self.offset -= self._held   # a held file is read again whole
        self._held = 0
        sizes = {}
        for f in files:
            try:
                sizes[f.name] = f.stat().st_size
            except OSError:
                sizes[f.name] = 0
        self.size_seen = sum(sizes.values())
        read = 0
        mtime: float | None = None
        for i, f in enumerate(files[len(self._names):], len(self._names)):
            if max_bytes is not None and read >= max_bytes:
                batch.more = True
                break
            last = i == len(files) - 1
            size = sizes[f.name]
            if size > self.max_line:
                data = None
            else:
                try:
                    data = read_regular(f, self.admit)
                except OSError:
                    break   # gone between the listing and the read: the next poll says
                if data is None:   # not a regular file now, or a link out of the root
                    self._names.append(f.name)
                    self.lineno += 1
                    self.offset += size
                    continue
            if data is not None and last and not final and not _whole(data):
                self._held = len(data)   # still being written: its turn comes
                self.offset += self._held
                break
            self._names.append(f.name)
            self.lineno += 1
            self.offset += size if data is None else len(data)
            read += size
            when = _mtime(f)
            if when is not None:
                mtime = when if mtime is None else max(mtime, when)
            if data is None:
                batch.too_long.append(self.lineno)
            else:
                batch.lines.append((one_line(data), self.lineno))
        batch.mtime = mtime if mtime is not None else st.st_mtime
        return batch


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _whole(data: bytes) -> bool:
    """The event file is complete: it parses as JSON."""
    try:
        orjson.loads(data)
    except ValueError:
        return False
    return True
