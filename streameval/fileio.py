"""Reading and writing files in directories agents write to: side files, records, spools.

``meta.json``, ``patch.diff``, ``model.patch``, ``ABORT`` and the watcher's checkpoint
sit where an agent (or an attacker steering one) can put anything: a FIFO that blocks
``open`` forever, a symlink to ``/dev/zero`` that never ends, a symlink planted where a
temporary file will be written. Every such file goes through here:

- reads open without following a final symlink and without blocking, take only
  regular files, and stop at a size limit, so one side file can neither hang the
  event loop nor fill memory;
- writes go to a fresh temporary name made with ``O_EXCL`` (``mkstemp``) in the same
  directory, are flushed, then renamed over the target: a planted symlink is never
  written through, and a reader sees the old file or the new one, never half;
- appended lines (records, spooled trace lines) land whole and fsync'd, or not at all,
  and a torn last line left by a crash is cut before the next append.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

#: meta.json, ABORT: a few KB in practice
SMALL = 1 << 20
#: a model patch: large refactors stay well under this
PATCH = 64 << 20


class SideFileError(OSError):
    """The side file exists but is not one we read: the message says why."""


def read_limited(path: Path | str, limit: int = SMALL) -> bytes | None:
    """The bytes of a regular file at ``path``; None when nothing is there.

    Raises SideFileError for a symlink, a FIFO, a device, a directory or a file over
    ``limit`` bytes, and OSError for other failures (permissions), so callers can
    count it and go on.
    """
    got = read_from(path, 0, limit)
    return None if got is None else got[0]


def read_from(path: Path | str, offset: int, limit: int = SMALL) -> tuple[bytes, os.stat_result] | None:
    """The bytes of the regular file at ``path`` from ``offset`` to its end, and its
    stat; None when nothing is there. The rules of ``read_limited``: ``limit`` bounds the
    file's whole size, so a file followed from where it was last read stays bounded."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise SideFileError(f"{path}: a symlink; side files are read only as regular files") from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
            raise SideFileError(f"{path}: {kind}; ignored")
        if st.st_size > limit:
            raise SideFileError(f"{path}: {st.st_size} bytes, over the {limit}-byte limit; ignored")
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        chunks, size = [], offset
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:   # grew while we read it
            raise SideFileError(f"{path}: over the {limit}-byte limit; ignored")
        return b"".join(chunks), st
    finally:
        os.close(fd)


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` (fsync'd) through a fresh O_EXCL temporary file
    beside it. Raises OSError (full disk, permissions); then nothing of ``data`` is left
    behind and ``target`` is unchanged."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)   # rename replaces a symlink itself, never its target
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def append_whole(path: Path, line: bytes, *, nofollow: bool = False, shared: bool = False) -> None:
    """Append ``line`` and fsync; on any failure cut the file back to where it was and
    raise, so no partial record is ever left for the next line to be glued onto. The
    folder is made only when missing (a hot path: each system call gives up the
    interpreter lock). ``nofollow``: a symlink is refused (OSError ELOOP).

    ``shared``: other processes append to the file too (the workers of ``watch
    --workers N``): the append holds the file's lock (``flock``), and a half line one
    of them left when it was killed is cut off first, not glued onto."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
             | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0))
    if shared:
        flags = flags & ~os.O_WRONLY | os.O_RDWR   # the torn line is read to be cut
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o644)
    try:
        if shared:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)   # released when the file is closed
            size = os.fstat(fd).st_size
            whole = _whole_lines(fd, size)
            if whole < size:
                os.ftruncate(fd, whole)
        start = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass   # cut at the next start (cut_torn_tail)
            raise
    finally:
        os.close(fd)


def _whole_lines(fd: int, size: int) -> int:
    """Where the last whole line of the file open at ``fd`` (``size`` bytes) ends."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    pos, step = size, 1 << 16
    while pos > 0:   # back to the last newline, a block at a time
        start = max(0, pos - step)
        nl = os.pread(fd, pos - start, start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def cut_torn_tail(path: Path, *, shared: bool = False) -> int:
    """Cut a last line that has no newline (a crash mid-write); returns bytes cut.
    ``shared``: others append to it too (``append_whole``): cut holding its lock."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        try:
            if shared:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            keep = _whole_lines(fd, size)
            if keep < size:
                os.ftruncate(fd, keep)
            return size - keep
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("cannot check %s for a torn last line: %s", path, exc)
        return 0
