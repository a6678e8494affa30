"""Which worker scores a trace (``watch --workers N``), and a worker's line to the
supervisor that keeps what the workers share.

The rule: **a trace file is followed by the worker its inode hashes to** (``owner_of``),
**unless another worker already follows that path**. The inode is what stays of a file
for life, across restarts too: a trace renamed or moved with its run directory keeps it
(and its worker follows it there, as one watcher does: ``Watcher.follow``); a run
directory copied in, a trace deleted and written again, are new files, new runs. All the
runs of a trace file are on its worker (OpenHands' ``output.jsonl`` holds one a line),
and a pushed run's spool file, which the front writes, is a file like any other. The
exception is a trace replaced by another file at its path (written whole, then renamed
over it): one watcher reads it again from its first byte as the same run, so its worker
keeps it. Every worker sees every file event under the root; each takes its own.

What the workers share is kept by the supervisor (``live.arbiter``), asked over a
private socket (``Control``): the run ids handed out (which of two runs asking for one
id keeps it bare must not depend on which worker asked first), and which worker follows
which path. Restarted with the same ``--workers``, every run is on the worker it was on.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import threading
from pathlib import Path

from streameval.live.link import frame, lines
from streameval.traces.identity import Claim
from streameval.traces.parts import is_conversation


def owner_of(inode: int, workers: int) -> int:
    """The worker (0..workers-1) whose file the inode ``inode`` is: inodes of one
    folder's files are often consecutive, so hashed, not taken modulo."""
    digest = hashlib.blake2b(inode.to_bytes(8, "little", signed=False), digest_size=8).digest()
    return int.from_bytes(digest, "little") % workers


class Control:
    """A worker's end of its socket to the supervisor: ``ask`` waits for the answer,
    ``tell`` does not (the supervisor answers asks only, in order)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buf = bytearray()
        self._ready: list[dict] = []
        self._lock = threading.Lock()

    def tell(self, message: dict) -> None:
        with self._lock:
            self.sock.sendall(frame(message))

    def ask(self, message: dict) -> dict:
        with self._lock:
            self.sock.sendall(frame(message))
            while not self._ready:
                got = lines(self.sock, self._buf)
                if got is None:
                    raise ConnectionError("the supervisor is gone")
                self._ready += got
            return self._ready.pop(0)


class RemoteRunIds:
    """A worker's run ids (``traces.identity.RunIds``'s part a watcher uses): the
    supervisor's, which hands them out for every worker and keeps them across restarts.
    The worker's checkpoint keeps none (``claims`` is empty)."""

    on_claim = None

    def __init__(self, control: Control):
        self.control = control

    def claim(self, run_id: str, trace: str | None, instance_id: str) -> str:
        return self.control.ask({"claim": [run_id, trace or "", instance_id]})["id"]

    def release(self, run_id: str) -> None:
        self.control.tell({"release": run_id})

    def claims(self) -> list[tuple[Claim, str]]:
        return []

    def restore(self, key: Claim, got: str) -> None:
        """A claim of an old checkpoint: the supervisor read it before any worker started."""

    def drop_restored(self) -> int:
        return 0   # the supervisor's, once every worker has started

    def __len__(self) -> int:
        return 0


class Shard:
    """Worker ``index`` of ``count``: which new files are its own (``take``), and what
    the supervisor must know of the paths it follows."""

    def __init__(self, index: int, count: int, control: Control):
        self.index = index
        self.count = count
        self.control = control
        self.run_ids = RemoteRunIds(control)

    def mine(self, path: Path) -> bool:
        """The file at ``path`` hashes to this worker (a cheap look, before any other:
        every worker is told of every file event). A folder that is no trace is every
        worker's: its files are looked at one by one."""
        try:
            st = os.stat(path)
        except OSError:
            return False
        if stat.S_ISDIR(st.st_mode) and not is_conversation(path):
            return True
        return owner_of(st.st_ino, self.count) == self.index

    def hold(self, path: Path) -> bool:
        """Follow ``path``, unless another worker does."""
        return bool(self.control.ask({"hold": str(path)})["ok"])

    def take(self, path: Path) -> bool:
        """A file not followed yet: this worker's to follow (and now held)."""
        return self.mine(path) and self.hold(path)

    def let_go(self, path: Path) -> None:
        self.control.tell({"let_go": str(path)})

    def moved(self, old: Path, new: Path) -> None:
        self.control.tell({"moved": [str(old), str(new)]})

    def declare(self, entries: list[list]) -> None:
        """The ids the first runs of this worker's traces will ask for (``declare``);
        answered once every worker has said its own."""
        self.control.ask({"declare": entries})

    def started(self) -> None:
        """The worker read what its checkpoint and the root hold."""
        self.control.tell({"started": True})
