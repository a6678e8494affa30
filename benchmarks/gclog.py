"""``python benchmarks/gclog.py LOG ARGS...``: ``streameval ARGS...`` with each full
garbage collection of its process (the oldest generation) written to LOG, one line each:
its end on the monotonic clock, how long it held the interpreter (ms), and the CPU time
it took (ms: the same on a quiet machine; on a loaded one the wall time also counts the
time the collecting thread waited for a core).

A full collection holds every thread of the process, so it is what a scrape served by
the watcher's own process waits for (``bench_soak.py --gc-log``). A measuring harness
only: streameval itself never installs it.
"""

from __future__ import annotations

import gc
import runpy
import sys
import time


def main() -> None:
    out = open(sys.argv[1], "a", buffering=1)   # noqa: SIM115 - open for the process's life
    began = [0.0, 0.0]

    def on_gc(phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            began[:] = time.perf_counter(), time.thread_time()
        else:
            out.write(f"{time.monotonic():.3f} {(time.perf_counter() - began[0]) * 1000:.1f} "
                      f"{(time.thread_time() - began[1]) * 1000:.1f}\n")

    gc.callbacks.append(on_gc)
    sys.argv = ["streameval", *sys.argv[2:]]
    runpy.run_module("streameval", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
