"""Where a test can stop the watcher: at a named point of a run's life, the watcher
stops itself (SIGSTOP) when ``STREAMEVAL_HALT_AT=POINT[:N]`` names it, the N-th time
it gets there, so the test kills it (SIGKILL) exactly there, with nothing timed
(tests/live/test_watch_kill_points.py). Unset, a point costs one comparison.

The points, in the order a run meets them (docs/operate.md, "Restarts"):

- ``started``: the watcher has read what its checkpoint and its root hold, and does
  not watch for file events yet;
- ``end-read``: the trace's end event was read; the run is not ended yet;
- ``run-ended``: the run ended, its record waits for the patch (``--patch-grace``);
- ``patch-landed``: a patch landed on a run; its record is not written yet;
- ``record-written``: a record was appended to ``--out``; the checkpoint does not
  say so yet (once it does, the checkpoint file shows it).
"""

from __future__ import annotations

import os
import signal

from streameval import config

POINTS = frozenset({"started", "end-read", "run-ended", "patch-landed", "record-written"})

_target = config.halt_at(POINTS)
_reached = 0


def reached(point: str) -> None:
    """The watcher is at ``point``: it stops there if told to."""
    global _reached
    if _target is None or point != _target[0]:
        return
    _reached += 1
    if _reached == _target[1]:
        os.kill(os.getpid(), signal.SIGSTOP)
