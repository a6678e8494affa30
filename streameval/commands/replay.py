"""``streameval replay``: score recorded traces and unified predictions in a batch.

The options, then: the batch (``runs.batch``) evaluated, one JSONL record per instance
written in input order, and the records handed to ``report`` for the summary table and
the Benchkit CSV; or, with ``--live``, the traces re-enacted into a watcher
(``playback``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any

from streameval.commands.options import (
    add_format,
    add_server,
    add_sources,
    non_negative_float,
    positive_float,
    positive_int,
)
from streameval.playback.reenact import LiveTable, default_linger, reenact, traces_of
from streameval.report import tables as report
from streameval.report.progress import Progress
from streameval.runs.batch import (
    BatchContext,
    Job,
    JobSelectionError,
    Sources,
    collect_jobs,
    evaluate_jobs,
    select_jobs,
)
from streameval.scoring.record import record_line
from streameval.sources.symbols import default_grammars
from streameval.traces.identity import RunIds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="PATH",
                        help="trace files, unified prediction files (JSON/JSONL) or "
                             "directories holding them")
    add_sources(parser)
    add_format(parser)
    parser.add_argument("--out", metavar="FILE", help="JSONL output (stdout when not given)")
    parser.add_argument("--csv", metavar="FILE", help="also write Benchkit-style CSV columns")
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="worker processes (output order stays the input order)")
    parser.add_argument("--shard", metavar="K/N", type=_parse_shard,
                        help="evaluate only instances with int(sha1(instance_id)) %% N == K "
                             "(K is 0-based)")
    parser.add_argument("--instance", metavar="ID",
                        help="instance id of a single trace file (for unified predictions: "
                             "evaluate only this instance)")
    parser.add_argument("--live", action="store_true",
                        help="re-enact the traces live with their original timing and serve "
                             "Prometheus metrics (for Grafana and demos) instead of writing JSONL")
    parser.add_argument("--speed", type=positive_float, default=1.0, metavar="X",
                        help="with --live: speed-up factor of the original timing")
    add_server(parser)
    parser.add_argument("--linger", type=non_negative_float, default=None, metavar="SECONDS",
                        help="with --live: keep serving this long after the last run "
                             "(until Ctrl-C on a terminal when not given, else 0)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress line and no summary table")


def _parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard wants K/N such as 0/4, got {text!r}") from None
    if n < 1 or not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs N >= 1 and 0 <= K < N, got {text!r}")
    return k, n


def run(args: argparse.Namespace) -> int:
    """Exit code: 0 if any instance was evaluated, 1 if none could be, 2 on usage errors."""
    if not (args.repos or args.repo):
        print("streameval replay: give --repos DIR and/or --repo DIR", file=sys.stderr)
        return 2
    context = BatchContext.build(*_sources(args))   # a file that cannot be used: UsageError
    if not args.quiet:
        for iid, message in context.gold.errors:
            print(f"streameval replay: gold row {iid}: {message}", file=sys.stderr)
    if getattr(args, "live", False):
        return _run_live(args, context)
    try:
        jobs = select_jobs(collect_jobs(args.inputs, args.fmt, args.instance),
                           args.shard, args.instance)
    except JobSelectionError as e:
        print(f"streameval replay: {e}", file=sys.stderr)
        return 2
    if not jobs:
        print("streameval replay: no traces or predictions found in "
              + " ".join(args.inputs), file=sys.stderr)
        return 1
    try:
        out: IO[bytes] = open(args.out, "wb") if args.out else sys.stdout.buffer  # noqa: SIM115
        if args.csv:   # found unwritable now, not after the whole batch
            open(args.csv, "ab").close()
    except OSError as e:
        print(f"streameval replay: cannot write {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    try:
        return _write_all(args, jobs, context, out)
    finally:
        context.repos.close()  # the git cat-file processes of this process


def _run_live(args: argparse.Namespace, context: BatchContext) -> int:
    """``--live``: agent traces are played into a watched directory (see live/reenact)."""

    traces = traces_of(args.inputs)   # named as replay names them: the same run ids
    if not traces:
        print("streameval replay --live: no trace files in " + " ".join(args.inputs),
              file=sys.stderr)
        return 1
    res = context.res
    listeners = [] if args.quiet else [LiveTable()]
    n = reenact(traces, res, host=args.host, port=args.port, speed=args.speed,
                linger=default_linger(args.linger),
                out=Path(args.out) if args.out else None, listeners=listeners,
                announce=lambda msg: print(f"streameval replay --live: {msg}", flush=True))
    return 0 if n else 1


def _write_all(args: argparse.Namespace, jobs: list[Job], context: BatchContext,
               out: IO[bytes]) -> int:
    progress = Progress(len(jobs), tty=sys.stderr.isatty(), quiet=args.quiet)
    kept: list[dict[str, Any]] = []
    ids = RunIds()   # as the watcher hands them out: no two runs share a run id
    try:
        for records in evaluate_jobs(jobs, context, _sources(args),
                                     args.workers):
            for record in records:
                if record.get("run_id"):
                    record["run_id"] = ids.claim(record["run_id"], record.get("trace"),
                                                 str(record.get("instance_id")))
                out.write(record_line(record))
                kept.append(_slim(record))
            progress.update(sum("error" in r for r in records))
        out.flush()
    finally:
        progress.close()
        if args.out:
            out.close()

    if args.csv:
        report.write_benchkit_csv(kept, args.csv)
    if not args.quiet:
        table = report.format_table(report.aggregate(kept))
        print(table, end="", file=sys.stderr if not args.out else sys.stdout)
    return 0 if any("error" not in r for r in kept) else 1


def _slim(record: dict[str, Any]) -> dict[str, Any]:
    """What the aggregates need: a long run's per-step curve is dropped from memory."""
    slim = {k: v for k, v in record.items() if k != "trajectory"}
    traj = record.get("trajectory")
    if isinstance(traj, dict):
        slim["trajectory"] = {k: v for k, v in traj.items() if k != "steps"}
    return slim


def _sources(args) -> Sources:
    """What a worker process needs to build its own context: gold, repos, tool map and
    the grammar set (chosen once here, so every worker parses with the same)."""

    return (args.gold, _text(args.repos), _text(args.repo), args.tool_map,
            getattr(args, "grammars", None) or default_grammars())


def _text(p: Any) -> str | None:
    return None if p is None else str(p)


def _text(p: Any) -> str | None:
    return None if p is None else str(p)
