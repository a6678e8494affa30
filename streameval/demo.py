"""``streameval demo``: the bundled example agent run, scored live, metrics served.

It is ``watch`` plus the trace player: a temporary directory is watched, the example
run is written into it line by line with its original pacing, and a compact table
shows coverage by granularity as each step arrives. The exporter serves
``/metrics`` throughout, so Prometheus or curl can watch the same numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .model import GRANULARITIES


def examples_dir() -> Path:
    """``examples/`` of the source checkout (the README runs the demo from there)."""
    return Path(__file__).resolve().parent.parent / "examples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=Path, default=None, help="examples directory (default: the checkout's)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9108, help="metrics port (0 = any free port)")
    p.add_argument("--speed", type=float, default=1.0, help="replay speed-up factor")
    p.add_argument("--linger", type=float, default=None,
                   help="seconds to keep serving after the run (default: until Ctrl-C on a terminal, 0 otherwise)")
    p.add_argument("--out", type=Path, help="also append the final record here (JSONL)")


class LiveTable:
    """Prints one line per new step: coverage by granularity as it grows."""

    def __init__(self, out=sys.stdout):
        self.out = out
        self.seen: dict[str, int] = {}
        print(f"{'run':<18}{'step':>5}{'calls':>6}  " + "".join(f"{g:>8}" for g in GRANULARITIES)
              + f"{'prec(line)':>11}  last tool", file=out, flush=True)

    def __call__(self, watcher) -> None:
        with watcher.table.lock:
            for key, run in watcher.table.runs.items():
                s = run.session
                n = s.extras.tool_calls
                if self.seen.get(key) == n or s.state is None:
                    continue
                self.seen[key] = n
                snap = s.state.snapshot()
                cov = "".join(f"{snap.granularities[g].coverage:>8.2f}" for g in GRANULARITIES)
                last = s.builder.last_tool if hasattr(s.builder, "last_tool") else ""
                print(f"{s.identity.run_id[:17]:<18}{s.num_steps:>5}{n:>6}  {cov}"
                      f"{snap.granularities['line'].precision:>11.2f}  {last}",
                      file=self.out, flush=True)


def run(args: argparse.Namespace) -> int:
    import anyio

    from .live.exporter import serve
    from .live.player import play
    from .live.watch import WatchConfig, Watcher, load_resources

    ex = (args.examples or examples_dir()).resolve()
    traces = sorted((ex / "runs").glob("*/trace.jsonl"))
    if not traces:
        print(f"streameval demo: no example runs under {ex / 'runs'}", file=sys.stderr)
        return 2
    linger = args.linger if args.linger is not None else (None if sys.stdout.isatty() else 0.0)
    with tempfile.TemporaryDirectory(prefix="streameval-demo-") as tmp:
        root = Path(tmp)
        cfg = WatchConfig(root=root, host=args.host, port=args.port, out=args.out,
                          idle_timeout=5.0, patch_grace=2.0, rescan_interval=1.0)
        w = Watcher(cfg, load_resources(str(ex / "gold.jsonl"), None, str(ex / "repo")))
        server, _reg, port = serve(w.table, args.host, args.port)
        print(f"streameval demo: metrics on http://{args.host}:{port}/metrics "
              f"(playing {len(traces)} example run(s) at {args.speed}x)", flush=True)
        w.listeners.append(LiveTable())

        async def main() -> None:
            stop = anyio.Event()
            async with anyio.create_task_group() as tg:
                await tg.start(_watch, w, stop)
                for trace in traces:
                    await play(trace, root, args.speed)
                await anyio.sleep(1.0)  # let the last lines and the patch be scored
                w.poll_all()
                for f in w.followers.values():
                    f.finish("end")
                w.tick()
                _final(w)
                if linger is None:
                    print("serving until Ctrl-C", flush=True)
                    await anyio.sleep_forever()
                await anyio.sleep(linger)
                stop.set()

        try:
            anyio.run(main)
        except KeyboardInterrupt:
            pass
        finally:
            server.shutdown()
    return 0


async def _watch(w, stop, *, task_status) -> None:
    from .live.watch import run_watcher

    await run_watcher(w, stop, task_status=task_status)


def _final(w) -> None:
    with w.table.lock:
        for run in w.table.runs.values():
            rec = run.session.record()
            if "error" in rec:
                print(f"final: {rec['instance_id']}: {rec['error']}", flush=True)
                continue
            cov = "  ".join(f"{g} {rec['final'][g]['coverage']:.2f}" for g in GRANULARITIES)
            el = rec.get("editloc")
            tail = f"  editloc {el['recall']:.2f}" if el else ""
            print(f"final: {rec['run_id']}: {rec['num_steps']} steps; coverage {cov}{tail}",
                  flush=True)
