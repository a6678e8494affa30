"""``streameval abort-backtest CONFIG TRACES...``: the options, and the report printed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from streameval.commands.options import (
    add_format,
    add_sources,
    check_repos,
    resources,
    say_outcomes,
)
from streameval.live.abort.backtest import RunOutcome, backtest_trace, find_traces, summarize
from streameval.live.abort.backtest_text import format_table
from streameval.live.abort.engine import AbortConfigError, AbortEngine, load_policies
from streameval.model import GRANULARITIES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", type=Path, metavar="FILE",
                   help="abort policy file (TOML, see examples/abort.toml)")
    p.add_argument("traces", nargs="+", type=Path, metavar="PATH",
                   help="trace files or directories of runs")
    add_sources(p)
    add_format(p)
    p.add_argument("--high-coverage", type=_ratio, default=0.8, metavar="X",
                   help="final coverage from which a stopped run counts as wrongly stopped")
    p.add_argument("--granularity", choices=GRANULARITIES, default="line",
                   help="granularity of --high-coverage")
    p.add_argument("--json", dest="json_out", type=Path, metavar="FILE",
                   help="write the numbers here as JSON")
    p.add_argument("--include-sidechain", action="store_true", help="score sub-agent tool calls too")


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 0 to 1")
    return value


def run(args: argparse.Namespace) -> int:
    try:
        config = load_policies(args.config)
    except AbortConfigError as exc:
        print(f"streameval abort-backtest: {exc}", file=sys.stderr)
        return 2
    traces = find_traces(args.traces)
    if not traces:
        print("streameval abort-backtest: no trace files found in "
              + " ".join(map(str, args.traces)), file=sys.stderr)
        return 2
    check_repos(args)
    res = resources(args)   # UsageError naming what cannot be used
    engine = AbortEngine(config, dry_run=True)
    outcomes: list[RunOutcome] = []
    for trace in traces:
        outcomes.extend(backtest_trace(trace, res, engine, args.granularity, fmt=args.fmt,
                                       include_sidechain=args.include_sidechain))
    summary = summarize(config, outcomes, args.high_coverage, args.granularity)
    print(format_table(summary))
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if say_outcomes("abort-backtest", res.outcomes, summary["runs"]) else 1
