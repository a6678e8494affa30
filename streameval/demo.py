"""``streameval demo``: the bundled example agent run, scored live, metrics served.

It is ``watch`` plus the trace player (``live/reenact.py``): a scratch directory is
watched, the example run is written into it line by line with its original pacing,
and a compact table shows coverage by granularity as each step arrives. The
exporter serves ``/metrics`` throughout, so Prometheus or curl see the same numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import config


def examples_dir() -> Path:
    """The example run shipped inside the package (``examples/`` in a checkout links
    here), so the demo plays from a wheel install as from the source tree."""
    return Path(__file__).resolve().parent / "examples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=Path, default=None,
                   help="examples directory (default: the one shipped with the package)")
    p.add_argument("--host", default=config.host(), help="metrics address (STREAMEVAL_HOST)")
    p.add_argument("--port", type=int, default=config.port(),
                   help="metrics port (STREAMEVAL_PORT; default 9108; 0 = any free port)")
    p.add_argument("--speed", type=float, default=1.0, help="replay speed-up factor")
    p.add_argument("--linger", type=float, default=None,
                   help="seconds to keep serving after the run "
                        "(default: until Ctrl-C on a terminal, else 0)")
    p.add_argument("--out", type=Path, help="also append the final record here (JSONL)")


def run(args: argparse.Namespace) -> int:
    from .live.reenact import LiveTable, default_linger, reenact
    from .tracefile import load_resources

    ex = (args.examples or examples_dir()).resolve()
    traces = sorted((ex / "runs").glob("*/trace.jsonl"))
    if not traces:
        print(f"streameval demo: no example runs under {ex / 'runs'}", file=sys.stderr)
        return 2
    res = load_resources(str(ex / "gold.jsonl"), None, str(ex / "repo"))
    n = reenact(traces, res, host=args.host, port=args.port, speed=args.speed,
                linger=default_linger(args.linger),
                out=args.out, listeners=[LiveTable()],
                announce=lambda msg: print(f"streameval demo: {msg}", flush=True))
    return 0 if n else 1
