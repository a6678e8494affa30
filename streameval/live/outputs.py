"""The watcher's own files: the ``--out`` records and the checkpoint.

Both outlive the process that writes them, so both must survive a crash, a full disk
and a hand (or an agent) that edited them: a record line is on disk whole or not at
all, a torn last line left by a crash is cut off before anything is appended, and a
checkpoint is used only when its version, its root and every entry's shape are right.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from streameval.fileio import cut_torn_tail, read_limited
from streameval.scoring.record import record_line

log = logging.getLogger(__name__)

#: bumped whenever the checkpoint's shape changes; another version starts afresh
CHECKPOINT_VERSION = 1
#: a checkpoint names one entry per followed file: far below this
CHECKPOINT_LIMIT = 256 << 20


@dataclass
class Checkpoint:
    """What a checkpoint restores: the followed files, each ``{inode, written}``, and
    the journals other parts keep in it (the abort decisions already acted on)."""

    files: dict[Path, dict] = field(default_factory=dict)
    journals: dict[str, Any] = field(default_factory=dict)


def record_digest(record: dict) -> str:
    return record_digest_of_line(record_line(record))


def record_digest_of_line(line: bytes) -> str:
    return hashlib.sha1(line).hexdigest()


class Digests:
    """Digests of records in ``--out``: every one read at a restart (a restarted watcher
    reads every trace again), and the ``keep`` written last; ``in`` asks both."""

    def __init__(self, keep: int = 10_000):
        self.keep = keep
        self._restored: set[str] = set()
        self._recent: OrderedDict[str, None] = OrderedDict()

    def restored(self, digest: str) -> None:
        self._restored.add(digest)

    def read_out(self, out: Path | None) -> None:
        """Every record ``out`` holds, at a restart; a half-written last record (a crash,
        a full disk) is cut off first, and so written again."""
        if out is None or not out.exists():
            return
        cut = cut_torn_tail(out)
        if cut:
            log.warning("%s ended in %d bytes of a half-written record (a crash or a full "
                        "disk); cut off, that record is written again", out, cut)
        with open(out, "rb") as fh:
            for line in fh:
                if line.endswith(b"\n"):
                    self.restored(record_digest_of_line(line))

    def wrote(self, line: bytes) -> None:
        """A record line was just appended to ``--out``."""
        self.add(record_digest_of_line(line))

    def add(self, digest: str) -> None:
        self._recent[digest] = None
        self._recent.move_to_end(digest)
        while len(self._recent) > self.keep:
            self._recent.popitem(last=False)

    def __contains__(self, digest: object) -> bool:
        return digest in self._recent or digest in self._restored

    def __len__(self) -> int:
        return len(self._restored) + len(self._recent)


class SharedDigests(Digests):
    """The digests of an ``--out`` several workers append to (``watch --workers N``):
    a digest not known is looked for among the records the others wrote since (read
    under the file's lock), so no worker writes a record another one wrote: a trace
    that changes worker (``--workers`` changed across a restart) is not recorded twice.
    Records are rare (one per finished run): so are these reads."""

    def __init__(self, keep: int = 10_000):
        super().__init__(keep)
        self.out: Path | None = None
        self._offset = 0

    def read_out(self, out: Path | None) -> None:
        """Every record ``out`` holds; a half line a killed worker left is cut off under
        the lock, never one another worker is writing."""
        self.out = out
        if out is None or not out.exists():
            return
        cut = cut_torn_tail(out, shared=True)
        if cut:
            log.warning("%s ended in %d bytes of a half-written record (a crash or a full "
                        "disk); cut off, that record is written again", out, cut)
        self._catch_up(self.restored)

    def _catch_up(self, add) -> None:
        import fcntl

        try:
            with open(self.out, "rb") as fh:
                fcntl.flock(fh, fcntl.LOCK_SH)   # no line half written meanwhile
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return
        whole = data[: data.rfind(b"\n") + 1]
        self._offset += len(whole)
        for line in whole.splitlines(keepends=True):
            add(record_digest_of_line(line))

    def __contains__(self, digest: object) -> bool:
        if super().__contains__(digest):
            return True
        if self.out is None:
            return False
        self._catch_up(self.add)
        return super().__contains__(digest)


def checkpoint_bytes(root: Path, files: dict[str, dict], journals: dict[str, Any]) -> bytes:
    """What ``read_checkpoint`` reads: each trace followed (its position, the bytes
    written as records), and the journals other parts keep there."""
    return orjson.dumps({"version": CHECKPOINT_VERSION, "root": str(root), "files": files,
                         "journals": journals, "saved_at": time.time()})


def read_checkpoint(path: Path, root: Path) -> Checkpoint:
    """The checkpoint at ``path``, or an empty one when absent or unusable (logged: the
    watcher then starts afresh).

    Only files inside ``root`` are taken: a checkpoint may be old, copied or edited,
    and the watcher must never follow a file the user did not point it at.
    """
    try:
        raw = read_limited(path, CHECKPOINT_LIMIT)
        if raw is None:
            return Checkpoint()
        data = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("checkpoint %s unusable (%s); starting afresh", path, exc)
        return Checkpoint()
    problem = _shape_problem(data)
    if problem:
        log.warning("checkpoint %s unusable (%s); starting afresh", path, problem)
        return Checkpoint()
    real_root = os.path.realpath(root)
    journals = data.get("journals") if isinstance(data.get("journals"), dict) else {}
    written_for = data.get("root")
    if journals and not (isinstance(written_for, str) and os.path.realpath(written_for) == real_root):
        # the run ids given and the abort decisions taken name the runs of that root (its
        # relative paths): as the claims file of another root, not taken
        log.warning("checkpoint %s was written for %s, not %s; the run ids and decisions "
                    "it keeps are not taken", path, written_for, root)
        journals = {}
    out = Checkpoint(journals=journals)
    for name, pos in data["files"].items():
        written = pos.get("written")
        if not isinstance(pos.get("inode"), int) or not isinstance(written, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in written.items()):
            log.warning("checkpoint %s: entry for %s malformed; that file is read afresh",
                        path, name)
            continue
        if os.path.commonpath([real_root, os.path.realpath(name)]) != real_root:
            log.warning("checkpoint %s names %s, outside %s; ignored", path, name, root)
            continue
        entry = {"inode": pos["inode"], "written": dict(written)}
        named = pos.get("named")
        if isinstance(named, str) and os.path.commonpath(
                [real_root, os.path.realpath(named)]) == real_root:
            entry["named"] = named   # a moved trace keeps the name first given
        out.files[Path(name)] = entry
    return out


def _shape_problem(data: object) -> str | None:
    if not isinstance(data, dict):
        return f"expected an object, got {type(data).__name__}"
    if data.get("version") != CHECKPOINT_VERSION:
        return f"version {data.get('version')!r}, this watcher writes {CHECKPOINT_VERSION}"
    if not isinstance(data.get("files"), dict):
        return "no 'files' object"
    if not all(isinstance(v, dict) for v in data["files"].values()):
        return "a 'files' entry is not an object"
    return None
