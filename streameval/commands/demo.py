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

from streameval.commands.options import (
    add_grammars,
    add_server,
    non_negative_float,
    positive_float,
)
from streameval.playback.reenact import LiveTable, default_linger, reenact
from streameval.report.tables import loud_flags
from streameval.runs.resources import load_resources


def examples_dir() -> Path:
    """The example run shipped inside the package (``examples/`` in a checkout links
    here), so the demo plays from a wheel install as from the source tree."""
    return Path(__file__).resolve().parent.parent / "examples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--examples", type=Path, default=None, metavar="DIR",
                   help="examples directory (when not given: the one shipped with the package)")
    add_server(p)
    add_grammars(p)
    p.add_argument("--speed", type=positive_float, default=1.0, metavar="X",
                   help="replay speed-up factor")
    p.add_argument("--linger", type=non_negative_float, default=None, metavar="SECONDS",
                   help="seconds to keep serving after the run (until Ctrl-C on a terminal "
                        "when not given, else 0)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="also append the final record here (JSONL)")


def run(args: argparse.Namespace) -> int:
    ex = (args.examples or examples_dir()).resolve()
    traces = sorted((ex / "runs").glob("*/trace.jsonl"))
    if not traces:
        print(f"streameval demo: no example runs under {ex / 'runs'}", file=sys.stderr)
        return 2
    res = load_resources(str(ex / "gold.jsonl"), None, str(ex / "repo"), None, args.grammars)
    records = reenact(traces, res, host=args.host, port=args.port, speed=args.speed,
                      linger=default_linger(args.linger),
                      out=args.out, listeners=[LiveTable()],
                      announce=lambda msg: print(f"streameval demo: {msg}", flush=True))
    # 1 when the run was not scored, or scored with numbers that may be wrong (a loud flag)
    return 0 if records and not any("error" in r or loud_flags(r) for r in records) else 1
