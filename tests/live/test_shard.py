"""Which worker of ``watch --workers N`` scores a trace (live/shard.py): the worker its
inode hashes to, the same after a restart; a folder that is no trace is every worker's
to walk; the supervisor's answers come back to the one who asked."""

from __future__ import annotations

import os
import socket
import threading
from collections import Counter

from streameval.live.link import frame, lines
from streameval.live.shard import Control, Shard, owner_of


def test_the_owner_of_an_inode_is_fixed_for_life():
    # a change here moves every run of a restarted watcher to another worker: its
    # checkpoint is then read by the others as a foreign one (resume.foreign)
    assert [owner_of(i, 4) for i in (12345, 2**40, 2**64 - 1)] == [3, 1, 1]
    assert all(0 <= owner_of(i, n) < n for i in range(1000) for n in (1, 2, 3, 8))


def test_consecutive_inodes_of_one_folder_spread_over_the_workers():
    """Inodes of one folder's files are often consecutive: hashed, each worker gets its
    share (taken modulo, a stride of N would put them all on one)."""
    for n in (2, 3, 8):
        counts = Counter(owner_of(i, n) for i in range(10_000, 10_000 + 1000 * n, n))
        assert len(counts) == n and min(counts.values()) >= 0.6 * 1000 / n


class _Supervisor(threading.Thread):
    """Answers each ask with what it was asked (the order of answers is the order of asks)."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock = sock
        self.told: list[dict] = []

    def run(self):
        buf = bytearray()
        while (got := lines(self.sock, buf)) is not None:
            for m in got:
                if "hold" in m:
                    self.sock.sendall(frame({"ok": m["hold"].endswith("mine")}))
                else:
                    self.told.append(m)


def test_a_worker_follows_its_own_files_and_every_folder(tmp_path):
    mine, theirs = socket.socketpair()
    sup = _Supervisor(theirs)
    sup.start()
    shards = [Shard(i, 2, Control(mine)) for i in range(2)]
    f = tmp_path / "trace.jsonl"
    f.write_text("{}\n")
    owner = owner_of(os.stat(f).st_ino, 2)
    assert shards[owner].mine(f) and not shards[1 - owner].mine(f)
    assert all(s.mine(tmp_path) for s in shards)          # a folder: walked by each
    assert not shards[0].mine(tmp_path / "gone.jsonl")     # nothing there
    g = tmp_path / "held-by-another"
    g.write_text("{}\n")
    assert not shards[owner_of(os.stat(g).st_ino, 2)].take(g)   # the supervisor said no
    shards[0].let_go(f)
    mine.shutdown(socket.SHUT_WR)
    sup.join(5)
    mine.close()
    theirs.close()
    assert sup.told == [{"let_go": str(f)}]
