"""Every full garbage collection of every Python process that starts with this folder
on ``PYTHONPATH`` and ``BENCH_GC_LOG`` set, appended to that file, one line each:
its end on the monotonic clock, how long it held the interpreter (ms), the CPU time it
took (ms), and which process (``watch``, ``front``, ``worker-N``).

A watcher with ``--workers N`` scores in N processes it starts itself, and an ingest
front in one more: a hook installed in the first process alone (runpy) saw only the
supervisor, which scores nothing. Python imports ``sitecustomize`` in every process at
its start, so each child logs its own collections. A measuring harness only
(``bench_soak.py --gc-log``): streameval never installs it.
"""

from __future__ import annotations

import gc
import os
import sys
import time

_LOG = os.environ.get("BENCH_GC_LOG")


def _role() -> str:
    argv = sys.argv
    if any(a.startswith("worker-") for a in argv[-1:]):
        return argv[-1]
    if argv and argv[0].endswith(os.path.join("live", "front.py")):
        return "front"
    if "watch" in argv[1:2]:
        return "watch"
    return os.path.basename(argv[0]) if argv else "?"


def _install(path: str) -> None:
    began = [0.0, 0.0]
    out: list = []

    def on_gc(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            began[:] = time.perf_counter(), time.thread_time()
            return
        if not out:   # opened at the first collection: sys.argv is complete by then
            out.append(open(path, "a", buffering=1))   # noqa: SIM115 - for the process's life
        out[0].write(f"{time.monotonic():.3f} {(time.perf_counter() - began[0]) * 1000:.1f} "
                     f"{(time.thread_time() - began[1]) * 1000:.1f} {_role()}\n")

    gc.callbacks.append(on_gc)


if _LOG:
    _install(_LOG)
