"""Every full garbage collection of every Python process that starts with this folder
on ``PYTHONPATH`` and ``BENCH_GC_LOG`` set, appended to that file, one line each:
its end on the monotonic clock, how long it held the interpreter (ms), the CPU time it
took (ms), which process (``watch``, ``front``, ``worker-N``), how many objects it freed, and
how many are frozen after it (every 20th: a walk of its own, 7 ms for 60,000, after the
pause was timed).

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
#: ``BENCH_GC_CENSUS=N`` too: every Nth full collection of a process is followed by a
#: census (``_census``) written to the log as a ``# census`` line (``bench_soak`` keeps
#: each process's last). It costs walks of its own: pause figures come from runs without.
_CENSUS = int(os.environ.get("BENCH_GC_CENSUS") or 0)
#: ``BENCH_GC_LONG=MS``: after a full collection that took more CPU than that, what it
#: walked and kept, by type, as a ``# long`` line
_LONG = float(os.environ.get("BENCH_GC_LONG") or 0)


def _role() -> str:
    argv = sys.argv
    if any(a.startswith("worker-") for a in argv[-1:]):
        return argv[-1]
    if argv and argv[0].endswith(os.path.join("live", "front.py")):
        return "front"
    if "watch" in argv[1:2]:
        return "watch"
    return os.path.basename(argv[0]) if argv else "?"


def _census(out) -> None:
    """What a full collection walks (objects and references, by type), what it found
    dead in cycles (``DEBUG_SAVEALL``), and how long one takes now: run from a timer
    thread, since a collection cannot start inside another's callback."""
    from collections import Counter

    objects = gc.get_objects()   # the frozen ones are not walked, and not listed
    kinds, refs = Counter(), Counter()
    for o in objects:
        kinds[type(o).__qualname__] += 1
        refs[type(o).__qualname__] += len(gc.get_referents(o))
    del objects
    gc.callbacks.remove(_hook[0])
    gc.set_debug(gc.DEBUG_SAVEALL)
    t = time.thread_time()
    try:
        gc.collect()
    finally:
        gc.set_debug(0)
        gc.callbacks.append(_hook[0])
    took = (time.thread_time() - t) * 1000
    garbage = Counter(type(o).__qualname__ for o in gc.garbage)
    gc.garbage.clear()
    out.write(f"# census {_role()} {sum(kinds.values())} objects {sum(refs.values())} references, "
              f"frozen {gc.get_freeze_count()}, collected again in {took:.1f} ms cpu: "
              + ", ".join(f"{k} {n}/{refs[k]}" for k, n in kinds.most_common(25))
              + " | dead in cycles: " + ", ".join(f"{k} {n}" for k, n in garbage.most_common(15))
              + "\n")


def _walked(out) -> None:
    """What a long collection walked and kept (its survivors), by type: from its own
    callback, so with no collection of its own."""
    from collections import Counter

    objects = gc.get_objects()
    kinds = Counter(type(o).__qualname__ for o in objects)
    refs = sum(len(gc.get_referents(o)) for o in objects)
    out.write(f"# long {_role()} {len(objects)} objects {refs} references: "
              + ", ".join(f"{k} {n}" for k, n in kinds.most_common(20)) + "\n")


def _install(path: str) -> None:
    began = [0.0, 0.0]
    seen = [0]
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
                     f"{(time.thread_time() - began[1]) * 1000:.1f} {_role()} {info['collected']} "
                     f"{gc.get_freeze_count() if seen[0] % 20 == 0 else '-'}\n")
        seen[0] += 1
        if _LONG and (time.thread_time() - began[1]) * 1000 > _LONG:
            _walked(out[0])
            f, names = sys._getframe(1), []
            while f is not None and len(names) < 8:
                names.append(f.f_code.co_name)
                f = f.f_back
            out[0].write(f"# from {' < '.join(names)}\n")
        if _CENSUS and seen[0] % _CENSUS == 0:
            import threading  # not from here: a collection cannot start inside another

            threading.Timer(0.05, _census, (out[0],)).start()

    gc.callbacks.append(on_gc)
    _hook.append(on_gc)


_hook: list = []


if _LOG:
    _install(_LOG)
