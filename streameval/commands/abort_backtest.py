"""``streameval abort-backtest CONFIG TRACES...``: the options, and the report printed;
``streameval abort-backtest --tune OUT.toml TRACES... --outcomes PATH``: policies chosen
on some repositories' runs and judged on the others' (``live.abort.tune``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from streameval.commands.options import (
    add_format,
    add_sources,
    check_repos,
    gold_given,
    non_negative_int,
    resources,
    say_outcomes,
)
from streameval.errors import UsageError
from streameval.live.abort.backtest import RunOutcome, backtest_trace, find_traces, summarize
from streameval.live.abort.backtest_text import format_table
from streameval.live.abort.engine import AbortConfigError, AbortEngine, load_policies
from streameval.model import GRANULARITIES

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="the abort policy file (TOML, see examples/abort.toml), then trace "
                        "files or directories of runs; with --tune, traces only")
    add_sources(p)
    add_format(p)
    p.add_argument("--high-coverage", type=_ratio, default=0.8, metavar="X",
                   help="without outcomes: the final coverage from which a stopped run "
                        "counts as wrongly stopped (the proxy)")
    p.add_argument("--granularity", choices=GRANULARITIES, default="line",
                   help="granularity of --high-coverage")
    p.add_argument("--json", dest="json_out", type=Path, metavar="FILE",
                   help="write the numbers here as JSON")
    p.add_argument("--include-sidechain", action="store_true", help="score sub-agent tool calls too")
    t = p.add_argument_group("tuning (docs/operate.md, \"Choose a policy from your own history\")")
    t.add_argument("--tune", type=Path, metavar="OUT.toml",
                   help="search each policy kind's thresholds on a training split of the "
                        "runs (by repository), report the held-out Pareto front of spend saved "
                        "against resolved runs lost, and write the chosen policies here "
                        "(needs --outcomes)")
    t.add_argument("--max-lost", type=_ratio, default=0.02, metavar="SHARE",
                   help="the most of the training runs' resolved runs a chosen policy may stop "
                        "(default %(default)g)")
    t.add_argument("--kinds", metavar="KIND[,KIND]",
                   help="the policy kinds to tune (default: max_steps, tokens, cost, "
                        "no_new_files, repeats, reread_share, and with gold stagnation and "
                        "precision)")
    t.add_argument("--spend", choices=("tokens", "cost_usd", "tool_calls", "steps"),
                   default="tokens", help="what spend is measured in (default %(default)s)")
    t.add_argument("--test-share", type=_ratio, default=0.5, metavar="SHARE",
                   help="the share of the runs held out (default %(default)g)")
    t.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                   help="the order the repositories are shuffled in for the split")


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 0 to 1")
    return value


def _replay(args: argparse.Namespace, config, traces: list[Path]) -> tuple[list[RunOutcome], object]:
    check_repos(args)
    res = resources(args)   # UsageError naming what cannot be used
    engine = AbortEngine(config, dry_run=True)
    outcomes: list[RunOutcome] = []
    for trace in traces:
        outcomes.extend(backtest_trace(trace, res, engine, args.granularity, fmt=args.fmt,
                                       include_sidechain=args.include_sidechain))
    return outcomes, res


def _traces(paths: list[Path]) -> list[Path]:
    traces = find_traces(paths)
    if not traces:
        raise UsageError("no trace files found in " + " ".join(map(str, paths)))
    return traces


def run(args: argparse.Namespace) -> int:
    if args.tune is not None:
        return _tune(args)
    if len(args.paths) < 2:
        raise UsageError("give the policy file, then trace files or directories (or --tune "
                         "OUT.toml and traces)")
    try:
        config = load_policies(args.paths[0])
    except AbortConfigError as exc:
        print(f"streameval abort-backtest: {exc}", file=sys.stderr)
        return 2
    outcomes, res = _replay(args, config, _traces(args.paths[1:]))
    summary = summarize(config, outcomes, args.high_coverage, args.granularity)
    print(format_table(summary))
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if say_outcomes("abort-backtest", res.outcomes, summary["runs"]) else 1


def _kinds(args: argparse.Namespace) -> list[str]:
    from streameval.live.abort.tune import GOLD_KINDS, GRIDS

    if args.kinds is None:
        kinds = [k for k in GRIDS if k not in GOLD_KINDS]
        return kinds + (list(GOLD_KINDS) if gold_given(args) else [])
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in GRIDS]
    if unknown or not kinds:
        raise UsageError(f"--kinds: {unknown or args.kinds!r} not tunable; kinds: "
                         + ", ".join(GRIDS))
    return kinds


def _tune(args: argparse.Namespace) -> int:
    """Exit code: 0 with a policy written; 1 when none keeps to --max-lost (nothing
    written) or the outcomes match no run; 2 for a usage error."""
    from streameval.live.abort.tune import candidate_config, tune
    from streameval.live.abort.tune_text import format_tune, tune_json, tuned_toml

    if not args.outcomes:
        raise UsageError("--tune judges policies by outcomes: give --outcomes PATH")
    kinds = _kinds(args)
    outcomes, res = _replay(args, candidate_config(kinds), _traces(args.paths))
    if not say_outcomes("abort-backtest", res.outcomes,
                        [{"run_id": o.run_id, "instance_id": o.instance_id,
                          "resolved": o.resolved} for o in outcomes]):
        return 1
    result = tune(outcomes, kinds, args.spend, args.max_lost, args.test_share, args.seed)
    written = None
    if result.pick is not None:
        args.tune.parent.mkdir(parents=True, exist_ok=True)
        args.tune.write_text(tuned_toml(result))
        written = str(args.tune)
    print(format_tune(result, written), end="")
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(tune_json(result), indent=2) + "\n")
    return 0 if written else 1
