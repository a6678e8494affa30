"""Follow one growing file: whole lines only, and notice truncation and replacement.

A writer may be caught mid-line; the partial last line is kept back until its newline
arrives, so a half-written JSON object is never parsed (and never counted as bad).
A file that shrinks was truncated, one with a new inode was replaced, and one whose
bytes already read changed (its first or last read bytes differ, or a same-size save
changed its hash) was rewritten: all mean "start this trace again from scratch",
which the caller decides how to do.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_MAX_LINE = 64 << 20  # bytes; a longer line is skipped and reported
READ_CHUNK = 256 << 10
#: bytes at the start and just before the read offset compared at every poll
ANCHOR = 4096
#: told (descriptor, path) of each file a poll opened, before a byte is read: False and
#: nothing of it is read (the watcher's rule on links out of its root,
#: ``live.watchset.OutsideLinks.opened``)
Admit = Callable[[int, str], bool]


@dataclass(slots=True)
class TailBatch:
    """What one ``poll`` found."""

    lines: list[tuple[bytes, int]] = field(default_factory=list)  # (line, 1-based number)
    status: str = "ok"            # ok | missing | truncated | replaced | rewritten
    too_long: list[int] = field(default_factory=list)   # numbers of skipped huge lines
    mtime: float | None = None    # the file's mtime when read: the lines' write time
    more: bool = False            # stopped at ``max_bytes`` with the file not read to its end
    #: the number of the last line when a final poll gave it without its newline (the
    #: file ends mid-line: cut short, or still being written); None otherwise
    cut: int | None = None

    def ordered(self) -> list[tuple[bytes | None, int]]:
        """Every line in file order, a skipped (too long) one as ``(None, lineno)``: what
        the watcher and replay's ``iter_lines`` both feed a ``TraceReader``."""
        if not self.too_long:
            return list(self.lines)
        return sorted([*self.lines, *((None, n) for n in self.too_long)], key=lambda item: item[1])


class FileTail:
    """Incremental reader of one file; ``poll()`` returns the lines added since last time.

    After a ``truncated``/``replaced`` status the tail has already reset itself to the
    start of the (new) file and the batch holds lines from there.
    """

    def __init__(self, path: str | os.PathLike, max_line: int = DEFAULT_MAX_LINE,
                 watch_rewrites: bool = True, admit: Admit | None = None):
        self.path = os.fspath(path)
        self.max_line = max_line
        self.admit = admit
        self.inode: int | None = None
        self.offset = 0           # bytes consumed (including the partial buffer)
        self.lineno = 0
        self.size_seen = 0        # the file's size at the last poll
        self._partial = bytearray()
        self._skipping = False    # inside a line longer than max_line
        # what was read, to notice a rewrite that neither shrank the file nor changed
        # its inode: its first and last ANCHOR bytes read, a checksum of all of it, mtime
        self._head = b""
        self._anchor = b""
        self._sum = 0   # zlib.crc32 of every byte read (see ``_rewritten``)
        self._mtime_ns = 0
        #: off for a file read once to its end (replay): nothing can change under it
        self.watch_rewrites = watch_rewrites

    # ------------------------------------------------------------------ state
    def position(self) -> dict:
        """Serializable position (for checkpoints): inode, offset of whole lines, lineno."""
        return {"inode": self.inode, "offset": self.offset - len(self._partial),
                "lineno": self.lineno}

    def reset(self) -> None:
        self.inode = None
        self.offset = 0
        self.lineno = 0
        self._partial.clear()
        self._skipping = False
        self._head = self._anchor = b""
        self._sum = 0
        self._mtime_ns = 0

    @property
    def backlog(self) -> int:
        """Bytes the file had at the last poll that are not read yet (a catch-up)."""
        return max(0, self.size_seen - self.offset)

    @property
    def pending(self) -> int:
        """Bytes of an unfinished last line held back."""
        return len(self._partial)

    # ------------------------------------------------------------------ reading
    def poll(self, final: bool = False, max_bytes: int | None = None) -> TailBatch:
        """Read what was appended. ``final=True`` also returns an unfinished last line
        (use it only once the writer is known to be done).

        ``max_bytes`` stops reading after about that many bytes (whole ``READ_CHUNK``
        reads), so a caller catching up on a large file holds bounded memory; it then
        polls again (``more`` tells whether the file had more when reading stopped).
        """
        batch = TailBatch()
        try:
            # O_NONBLOCK: a FIFO under the trace name must not block the watcher
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:  # gone, or unreadable (permissions, symlink loop): nothing to read
            batch.status = "missing"
            return batch
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or \
                    self.admit is not None and not self.admit(fd, self.path):
                # a directory (or a device) put where the file was: nothing to read, as
                # when it is gone (reading it raised IsADirectoryError out of the
                # watcher); nor a file the path leads to now that may not be read
                batch.status = "missing"
                return batch
            batch.mtime = st.st_mtime
            self.size_seen = st.st_size
            if self.inode is not None and st.st_ino != self.inode:
                batch.status = "replaced"
                self.reset()
            elif st.st_size < self.offset:
                batch.status = "truncated"
                self.reset()
            elif self.offset and self.watch_rewrites and self._rewritten(fd, st):
                batch.status = "rewritten"
                self.reset()
            self.inode = st.st_ino
            self._mtime_ns = st.st_mtime_ns
            if st.st_size > self.offset:
                os.lseek(fd, self.offset, os.SEEK_SET)
                read = 0
                while True:
                    if max_bytes is not None and read >= max_bytes:
                        batch.more = True
                        break
                    data = os.read(fd, READ_CHUNK)
                    if not data:
                        break
                    read += len(data)
                    self.offset += len(data)
                    if self.watch_rewrites:
                        self._sum = zlib.crc32(data, self._sum)
                    self._consume(data, batch)
                if read and self.watch_rewrites:
                    self._head = self._head if len(self._head) >= ANCHOR else \
                        os.pread(fd, min(ANCHOR, self.offset), 0)
                    low = max(0, self.offset - ANCHOR)
                    self._anchor = os.pread(fd, self.offset - low, low)
        finally:
            os.close(fd)
        if final and not batch.more and self._partial and not self._skipping:
            self.lineno += 1
            batch.lines.append((bytes(self._partial).rstrip(b"\r"), self.lineno))
            batch.cut = self.lineno
            self._partial.clear()
        return batch

    def _rewritten(self, fd: int, st: os.stat_result) -> bool:
        """The bytes already read are no longer the file's: rewritten in place while
        we were away (truncated and written past our offset, or saved again at the
        same size). Two small reads per poll; the whole read part is summed again only
        when the mtime moved and the size did not (a same-size save, or a touch).

        The sum is a CRC-32, not a cryptographic hash: it tells a save that changed the
        bytes from a touch that did not (a change within 32 consecutive bits always, any
        other but once in 2**32), and whoever writes the trace could write any bytes
        anyway. It is summed over every byte the watcher reads, where blake2b took
        ~5% of a live trace's CPU time (issue 28)."""
        if os.pread(fd, len(self._head), 0) != self._head:
            return True
        low = self.offset - len(self._anchor)
        if os.pread(fd, len(self._anchor), low) != self._anchor:
            return True
        if st.st_size == self.offset and st.st_mtime_ns != self._mtime_ns:
            again = 0
            pos = 0
            while pos < self.offset:
                data = os.pread(fd, min(READ_CHUNK, self.offset - pos), pos)
                if not data:
                    return True
                again = zlib.crc32(data, again)
                pos += len(data)
            return again != self._sum
        return False

    def _consume(self, data: bytes, batch: TailBatch) -> None:
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                rest = data[start:]
                if not self._skipping:
                    self._partial += rest
                    if len(self._partial) > self.max_line:
                        self._partial.clear()
                        self._skipping = True
                return
            piece = data[start:nl]
            self.lineno += 1
            if self._skipping:
                batch.too_long.append(self.lineno)
                self._skipping = False
            elif len(self._partial) + len(piece) > self.max_line:
                batch.too_long.append(self.lineno)
                self._partial.clear()
            else:
                if self._partial:
                    self._partial += piece
                    line = bytes(self._partial)
                    self._partial.clear()
                else:
                    line = piece
                batch.lines.append((line.rstrip(b"\r"), self.lineno))
            start = nl + 1


def read_regular(path: str | os.PathLike, admit: Admit | None = None) -> bytes | None:
    """The bytes of the regular file at ``path``, opened without blocking (a FIFO put
    there between a listing and this read must not hang the reader); None when what the
    path leads to is no regular file, or ``admit`` refuses it. OSError when it cannot be
    opened or read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or \
                admit is not None and not admit(fd, os.fspath(path)):
            return None
        chunks = []
        while chunk := os.read(fd, READ_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
