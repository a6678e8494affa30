"""What the freezer freezes is still freed (issue 27).

``live.freezer`` freezes every object that survives a tick, so full collections walk only
what is new. A frozen object is freed by reference counts as before, but one that dies
in a reference cycle after it was frozen is never freed: a run, its session, its follower
or its page journal let go in a cycle would leak once per run. Here runs pass through a
watcher (and its page) that freezes at every tick and lets them go (``max_runs``); at the
end every object is unfrozen and collected with ``DEBUG_SAVEALL``, which keeps what was
garbage in ``gc.garbage``: what the freezer would never have freed.
"""

from __future__ import annotations

import gc
import json
import time
from collections import Counter

from claude_run import APP, WORKSPACE, Claude, append, watcher

from streameval.live.freezer import Freezer


def _run(runs, i: int, instance: str) -> None:
    """A run that reads a file, greps and pipes (the shell's reading makes cycles of its
    own while it reads: those must be dead by the tick), then ends."""
    d = runs / f"r{i}"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": f"r{i}"}))
    c = Claude()
    lines = APP.splitlines()
    grep = "\n".join(f"{n}:{t}" for n, t in enumerate(lines, 1) if "f1" in t)
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1 + i % 20, 5),
           *c.bash(f"cd {WORKSPACE} && grep -n f1 src/app.py | head -20", grep),
           *c.bash(f"sed -n '{1 + i % 9},{12 + i % 9}p' {WORKSPACE}/src/app.py",
                  "\n".join(lines[i % 9:12 + i % 9])),
           c.result())


def test_runs_let_go_after_a_freeze_leave_no_cycle_behind(env, tmp_path):
    from streameval.live.exposition import prerender
    from streameval.live.pages import LivePages

    s, runs, res = env
    w = watcher(runs, res, tmp_path, max_runs=5, keep_finished=0.0)
    w.table.on_settled.append(prerender)          # /metrics renders a run once, as served
    pages = LivePages(w.table, res, keep_calls=0)
    freezer = Freezer(every=0.0)                  # a freeze at every tick and file
    w.tick_hooks.append(freezer.tick)
    w.between_files.append(freezer.tick)
    n = 80
    try:
        freezer.start()
        made = [[] for _ in range(3)]             # made after the start: walked till a tick
        assert any(o is made for o in gc.get_objects())
        for i in range(n):
            _run(runs, i, s.instance)
            w.scan()
            w.poll_all()
            w.tick(now=time.time() + 1)
            pages.prune(now=time.time() + 10 * (i + 1))
        assert not any(o is made for o in gc.get_objects())   # frozen at a tick: not walked
        records = (tmp_path / "out.jsonl").read_bytes().splitlines()
        assert len(records) == n and len(w.table.runs) <= 10
        gc.collect()                              # dead, never frozen: freed as ever
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        leaked = Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.unfreeze()
    # one object a run in a cycle would be 75 or more (a cycle added per run: 4,222); some
    # of another test's threads finishing meanwhile (a server's connection) are allowed
    assert sum(leaked.values()) < 60, leaked.most_common(15)


def test_the_watcher_freezes_at_ticks_unless_a_thread_of_its_own_serves_or_exports(env, tmp_path):
    from streameval.commands.watch import _freeze_what_lives_on

    s, runs, res = env
    try:
        for at_ticks in (True, False):
            w = watcher(runs, res, tmp_path)
            _freeze_what_lives_on(w, at_ticks=at_ticks)
            made = [[] for _ in range(3)]
            time.sleep(0.25)                      # past the freezer's one tick between freezes
            w.tick()
            assert any(o is made for o in gc.get_objects()) is not at_ticks
    finally:
        gc.unfreeze()
