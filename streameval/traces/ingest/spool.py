"""Where pushed runs become trace files: ``<spool>/<source>/<run id>/trace.jsonl`` with
a ``meta.json`` beside it, inside the watched directory, so the watcher follows them
as it follows any trace and their records equal ``replay`` of the same files.

An answer of 200 means the lines are on disk and will be there after a crash:

- a run is made whole or not at all: ``meta.json`` and the first lines are written and
  fsync'd in a staging directory (``.staging``, hidden from the watcher), which is then
  renamed into place, and the source directory is fsync'd; a staging directory left by
  a crash was never answered, and is removed at start;
- lines are appended and fsync'd before the answer; a torn last line left by a crash
  (never answered either) is cut before the run's next append;
- a run directory without ``meta.json`` (left by an older spool) gets it from the next
  request for the run.

A retry of an answered request is stored once: entries carry a key (``keys``), and the
keys a run holds are read back from its trace the first time a process touches it;
raw lines carry the client's byte ``offset`` instead (``append_at``).

Names come from requests, so they are checked (``[A-Za-z0-9._-]``, at most 128
characters, not beginning with ``.``), files are opened without following symlinks, and the
runs open at once per source are bounded: a run is open while it was pushed to within
``idle`` seconds (the watcher's idle timeout) and has not ended.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from streameval.fileio import append_whole, cut_torn_tail
from streameval.traces.identity import META_NAME
from streameval.traces.ingest.keys import key_of_line
from streameval.traces.names import TRACE_NAME

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
SOURCES = ("lines", "claude-hooks", "claude-otel", "codex-otel")
STAGING = ".staging"
META = META_NAME
TRACE = TRACE_NAME   # the one name a trace in a run directory has (traces.names)


class SpoolError(ValueError):
    """A request names a run the spool cannot take; ``status`` is the HTTP answer and
    ``offset`` (lines with an offset) the byte the client should send from."""

    def __init__(self, message: str, status: int = 400, offset: int | None = None):
        super().__init__(message)
        self.status = status
        self.offset = offset


#: what a pushed run or session id may be (``valid_name``), as the refusals say it
NAME_RULE = "1-128 characters of letters, digits, '.', '_' or '-', not beginning with '.'"


def valid_name(name: str) -> bool:
    """A run id the spool takes (``NAME_RULE``). A name beginning with ``.`` is hidden:
    the watcher never follows it (``.staging`` is the spool's own), so a run pushed
    under one would be neither scored, shown nor stopped by a policy."""
    return bool(_NAME.fullmatch(name)) and not name.startswith(".")


@dataclass
class Entry:
    """One pushed thing (a tool call, an end): its idempotency key (None: none) and
    the trace lines written for it."""

    key: str | None
    lines: list[bytes]


@dataclass
class Stored:
    """What an append did: the trace, lines newly stored, entries that were already
    there (retries), and for raw lines the bytes the run now holds."""

    path: Path
    accepted: int = 0
    duplicates: int = 0
    offset: int | None = None
    #: bytes of the run's trace before and after this append (the spool is its only
    #: writer)
    before: int = 0
    size: int = 0


@dataclass
class _Run:
    """A run open in this process: its keys (read back from its trace once) and size."""

    source: str
    run_id: str
    #: its trace's path, made once: a path joined again for every hook was ~7% of the
    #: front's CPU at 1,000 hooks/s
    path: Path
    keys: set[str] = field(default_factory=set)
    #: bytes of its trace; -1 before the first touch, -2 when it is not on disk yet
    size: int = -1
    used: float = 0.0
    busy: int = 0
    #: its ``meta.json`` is known to be on disk (checked or written by this process)
    meta_ok: bool = False
    ended: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class Spool:
    """Durable, idempotent appends of pushed lines to per-run traces (thread-safe)."""

    #: called with the name of every durable step before it is taken (a test seam: the
    #: crash tests kill the process at each one in turn)
    step_hook: Callable[[str], None] | None = None

    def __init__(self, directory: Path, max_runs_per_source: int = 1000, idle: float = 300.0,
                 clock: Callable[[], float] = time.monotonic):
        self.directory = Path(directory)
        self.max_runs = max_runs_per_source
        self.idle = idle
        self.clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, OrderedDict[str, _Run]] = {s: OrderedDict() for s in SOURCES}
        self.recover()

    # ------------------------------------------------------------------ paths
    def trace_path(self, source: str, run_id: str) -> Path:
        return self.directory / source / run_id / TRACE_NAME

    def _step(self, name: str) -> None:
        if self.step_hook is not None:
            self.step_hook(name)

    def recover(self) -> int:
        """Remove staging directories a crash left (never answered: their clients
        retry); returns how many."""
        staging = self.directory / STAGING
        try:
            names = os.listdir(staging)
        except OSError:
            return 0
        for name in names:
            shutil.rmtree(staging / name, ignore_errors=True)
        if names:
            log.warning("spool %s: removed %d half-made run(s) a crash left (never "
                        "acknowledged; their clients send them again)", self.directory, len(names))
        return len(names)

    # ------------------------------------------------------------------ appends
    def append(self, source: str, run_id: str, entries: list[Entry], meta: dict, *,
               io: bool = True) -> Stored | None:
        """Store the entries not stored before (by key), creating the run when new.
        Raises SpoolError (400 bad name, 409 a symlink, 429 too many open runs).

        With ``io=False`` nothing touches the disk or waits for a lock: the answer when
        there is nothing to write (a PreToolUse, a retry) to a run already on disk, else
        None, and the caller asks again with ``io=True`` on an ingest thread. Half of a
        hook-connected agent's requests are answered so, without a thread's round trip."""
        claim = self._claim(source, run_id)
        if not io and not claim.try_enter():
            return None
        with claim as run:
            fresh, dup, seen = [], 0, set()
            for e in entries:
                if e.key is not None and (e.key in run.keys or e.key in seen):
                    dup += 1
                    continue
                if e.key is not None:
                    seen.add(_own(e.key))
                fresh.append(e)
            data = b"".join(_line(ln) for e in fresh for ln in e.lines if ln.strip())
            if not io and (data or not run.meta_ok):
                return None
            before = max(run.size, 0)
            self._write(run, data, meta)
            run.keys |= seen
            return Stored(run.path, sum(
                1 for e in fresh for ln in e.lines if ln.strip()), dup, before=before,
                size=run.size)

    def append_raw(self, run_id: str, body: bytes | bytearray, meta: dict) -> Stored:
        """Raw lines without an offset: whole lines are stored (blank ones dropped, a
        last line without newline ended); a retry is stored again."""
        data = normalize_lines(body)
        with self._claim("lines", run_id) as run:
            self._write(run, data, meta)
            return Stored(run.path, data.count(b"\n"), 0, run.size)

    def append_at(self, run_id: str, offset: int, data: bytes | bytearray, meta: dict) -> Stored:
        """Raw bytes at ``offset`` of the client's file: the run's trace is that file,
        byte for byte. Bytes already stored are acknowledged, not stored again (they
        must be the same bytes: 409 otherwise); a gap is a 409 naming the offset to
        send from."""
        with self._claim("lines", run_id) as run:
            path = run.path
            size = max(run.size, 0)
            if offset > size:
                raise SpoolError(f"offset {offset} is past the {size} bytes stored; "
                                 f"send from offset {size}", 409, size)
            overlap = min(size - offset, len(data))
            if overlap and _read_at(path, offset, overlap) != memoryview(data)[:overlap]:
                raise SpoolError(f"the bytes at offset {offset} differ from those stored "
                                 "for this run", 409, run.size)
            new = memoryview(data)[overlap:] if overlap else data
            self._write(run, new, meta)
            return Stored(path, bytes(new).count(b"\n") if overlap else new.count(b"\n"),
                          1 if overlap and not len(new) else 0, run.size)

    def end(self, source: str, run_id: str) -> None:
        """The run ended (SessionEnd): it no longer counts as open."""
        with self._lock:
            run = self._open[source].get(run_id)
            if run is not None:
                run.ended = True
                if not run.busy:
                    del self._open[source][run_id]

    def open_runs(self, source: str) -> int:
        with self._lock:
            self._expire(source, self.clock())
            return len(self._open[source])

    # ------------------------------------------------------------------ the run
    def _claim(self, source: str, run_id: str) -> _Claim:
        if source not in SOURCES:
            raise SpoolError(f"unknown source {source!r}")
        if not valid_name(run_id):
            raise SpoolError(f"run id {run_id[:80]!r} must be {NAME_RULE}")
        now = self.clock()
        with self._lock:
            runs = self._open[source]
            run = runs.get(run_id)
            if run is None:
                self._expire(source, now)
                if len(runs) >= self.max_runs:
                    raise SpoolError(f"source {source} has {len(runs)} runs open "
                                     f"(--ingest-max-runs {self.max_runs}); retry later", 429)
                run = runs[run_id] = _Run(source, run_id, self.trace_path(source, run_id))
            runs.move_to_end(run_id)
            run.used = now
            run.busy += 1
        return _Claim(self, run)

    def _release(self, run: _Run) -> None:
        with self._lock:
            run.busy -= 1
            run.used = self.clock()
            if run.ended and not run.busy:
                self._open[run.source].pop(run.run_id, None)

    def _expire(self, source: str, now: float) -> None:
        runs = self._open[source]
        while runs:
            run = next(iter(runs.values()))
            if run.busy or now - run.used <= self.idle:
                break
            del runs[run.run_id]

    def _load(self, run: _Run) -> None:
        """First touch in this process: repair what a crash left, read back the keys."""
        path = run.path
        run_dir = path.parent
        if run_dir.is_symlink():
            raise SpoolError(f"{run_dir} is a symlink; refused", 409)
        if not run_dir.is_dir():
            run.size = -2
            return
        _no_symlink(path)
        _no_symlink(run_dir / META)
        for name in os.listdir(run_dir):
            if name.startswith(f".{META}.") and name.endswith(".tmp"):
                try:
                    os.unlink(run_dir / name)
                except OSError:
                    pass
        if run.source != "lines":   # a raw-lines run is the client's bytes, torn or not
            cut = cut_torn_tail(path) if path.exists() else 0
            if cut:
                log.warning("%s: cut %d bytes of a line a crash left half-written "
                            "(never acknowledged)", path, cut)
        try:
            with open(path, "rb") as fh:
                for line in fh:
                    key = key_of_line(run.source, line)
                    if key is not None:
                        run.keys.add(key)
                run.size = fh.tell()
        except FileNotFoundError:
            run.size = 0

    def _write(self, run: _Run, data: bytes, meta: dict) -> None:
        """``data`` on disk, fsync'd, the run made first when it is new."""
        if run.size == -2:
            self._create(run, data, meta)
            run.size = len(data)
            run.meta_ok = True
            return
        if not run.meta_ok:
            run_dir = run.path.parent
            if not (run_dir / META).exists():
                self._write_meta(run_dir, run.run_id, meta)
            run.meta_ok = True
        if data:
            self._step("append")
            try:
                append_whole(run.path, data, nofollow=True)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise SpoolError(f"{run.path} is a symlink; refused", 409) from None
                raise
            run.size += len(data)
        self._step("answer")

    def _create(self, run: _Run, data: bytes, meta: dict) -> None:
        source_dir = self.directory / run.source
        staging = self.directory / STAGING / f"{run.source}.{run.run_id}.{uuid.uuid4().hex[:12]}"
        self._step("mkdir")
        for d in (self.directory, source_dir, self.directory / STAGING):
            if not d.is_dir():
                d.mkdir(parents=True, exist_ok=True)
                _fsync_dir(d.parent)
        staging.mkdir()
        try:
            self._write_file(staging / META, _meta_bytes(run.run_id, meta), "meta")
            self._write_file(staging / TRACE, data, "trace")
            _fsync_dir(staging)
            self._step("rename")
            try:
                os.rename(staging, source_dir / run.run_id)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise SpoolError(f"run {run.run_id} appeared on disk meanwhile; retry", 409) from None
                raise
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._step("fsync_source")
        _fsync_dir(source_dir)
        self._step("answer")

    def _write_meta(self, run_dir: Path, run_id: str, meta: dict) -> None:
        tmp = run_dir / f".{META}.{uuid.uuid4().hex[:12]}.tmp"
        self._write_file(tmp, _meta_bytes(run_id, meta), "meta")
        self._step("rename_meta")
        os.replace(tmp, run_dir / META)
        _fsync_dir(run_dir)
        log.warning("%s had no %s (a run an older spool half-made); written from this "
                    "request", run_dir, META)

    def _write_file(self, path: Path, data: bytes, what: str) -> None:
        self._step(f"write_{what}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            self._step(f"fsync_{what}")
            os.fsync(fd)
        finally:
            os.close(fd)


class _Claim:
    """``with spool._claim(...) as run``: the run's lock held, its use counted."""

    def __init__(self, spool: Spool, run: _Run):
        self.spool, self.run = spool, run
        self._entered = False

    def try_enter(self) -> bool:
        """Take the run's lock only when it is free and the run already loaded (no wait,
        no disk); on False the claim is given back."""
        if self.run.size != -1 and self.run.lock.acquire(blocking=False):
            if self.run.size != -1:
                self._entered = True
                return True
            self.run.lock.release()
        self.spool._release(self.run)
        return False

    def __enter__(self) -> _Run:
        if self._entered:
            return self.run
        self.run.lock.acquire()
        try:
            if self.run.size == -1:
                self.spool._load(self.run)
        except BaseException:
            self.__exit__()
            raise
        return self.run

    def __exit__(self, *exc) -> None:
        self.run.lock.release()
        self.spool._release(self.run)


def _own(key: str) -> str:
    """A copy of ``key`` that shares no memory with the request it came from. A key
    is kept as long as its run is open; kept as the decoded request's own string, one
    call id every few KB of a body keeps that body's allocator pools (and their arenas)
    from ever being given back: after 8 OTLP bodies of 8 MiB, ~24 MB more RSS."""
    return key.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


def _line(line: bytes) -> bytes:
    return line.rstrip(b"\r\n") + b"\n"


_CR_BEFORE_NL = re.compile(rb"\r+\n")
_BLANK_LINE = re.compile(rb"(?m)^[ \t\x0b\x0c\r]*\n")


def normalize_lines(body: bytes | bytearray) -> bytes:
    """Whole lines of ``body``: ``\\r`` before a newline dropped, blank lines dropped,
    a last line ended. Two regular-expression passes over the bytes, never a list of
    lines (4 M one-character lines would be 4 M objects)."""
    data = body if body.endswith(b"\n") else bytes(body) + b"\n"
    return bytes(_BLANK_LINE.sub(b"", _CR_BEFORE_NL.sub(b"\n", data)))


def _meta_bytes(run_id: str, meta: dict) -> bytes:
    return json.dumps({"run_id": run_id, **meta}).encode()


def _read_at(path: Path, offset: int, n: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(n)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _no_symlink(path: Path) -> None:
    if os.path.islink(path):
        raise SpoolError(f"{path} is a symlink; refused", 409)
