"""``streameval replay``: score recorded traces and unified predictions in a batch.

The options, then: the batch (``runs.batch``) evaluated, one JSONL record per instance
written in input order, and the records handed to ``report`` for the summary table and
the Benchkit CSV; or, with ``--live``, the traces re-enacted into a watcher
(``playback``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Any

from streameval import config
from streameval.commands import otlp_options
from streameval.commands.options import (
    add_format,
    add_labels,
    add_server,
    add_sources,
    check_repos,
    gold_given,
    non_negative_float,
    positive_float,
    positive_int,
    say_outcomes,
    sources,
)
from streameval.errors import Interrupted, Whole
from streameval.report import tables as report
from streameval.report.columns import write_parquet
from streameval.report.gate import GateError, Threshold, fail_under, parse_thresholds
from streameval.report.otel import from_record
from streameval.report.progress import Progress
from streameval.report.tables import loud_flags, loud_reason
from streameval.runs.batch import (
    BatchContext,
    Job,
    JobSelectionError,
    collect_jobs,
    evaluate_jobs,
    select_jobs,
)
from streameval.scoring.record import record_line
from streameval.traces.identity import RunIds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="PATH",
                        help="trace files, unified prediction files (JSON/JSONL) or "
                             "directories holding them")
    add_sources(parser)
    add_labels(parser)
    add_format(parser)
    parser.add_argument("--out", metavar="FILE", help="JSONL output (stdout when not given)")
    parser.add_argument("--csv", metavar="FILE",
                        help="also write one CSV row per run: the Benchkit columns, then who "
                             "the run is and every other number (docs/replay.md)")
    parser.add_argument("--parquet", metavar="FILE",
                        help="also write the CSV's columns as a parquet table")
    parser.add_argument("--fail-under", metavar="METRIC=X[,...]", type=_thresholds,
                        help="exit 1 when a metric's mean over the scored runs is below X, "
                             "e.g. line.coverage=0.6,file.f1=0.5 (names: docs/compare.md)")
    parser.add_argument("--workers", type=positive_int, default=config.default_workers(),
                        metavar="N",
                        help="worker processes (default: the cores available, at most "
                             f"{config.MAX_DEFAULT_WORKERS}: {config.default_workers()} here); "
                             "the output order stays the input order")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local: this machine (--workers processes); ray: the Ray "
                             "cluster at --ray-address (streameval[ray]; docs/replay.md)")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="with --engine ray: the cluster (default: RAY_ADDRESS, else a "
                             "new local Ray instance)")
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
    parser.add_argument("--allow-partial", action="store_true",
                        help="exit 0 when some inputs could not be scored (error records), "
                             "as long as one was; by default any error record exits 1")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress line and no summary table")
    otlp_options.add_otlp(parser)


def _thresholds(text: str) -> list[Threshold]:
    try:
        return parse_thresholds(text)
    except GateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard wants K/N such as 0/4, got {text!r}") from None
    if n < 1 or not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs N >= 1 and 0 <= K < N, got {text!r}")
    return k, n


def run(args: argparse.Namespace) -> int:
    """Exit code (docs/replay.md, "Exit codes"): 0 when every input was scored and every
    ``--fail-under`` gate passed; 1 when some input was not scored (an error record:
    with ``--allow-partial``, only when none was), no input was found, gold was given
    and no run was measured against it, ``--outcomes`` named none of the runs, or a
    gate failed; 2 on usage errors."""
    check_repos(args)   # UsageError: exit 2
    context = BatchContext.build(*sources(args))   # a file that cannot be used: UsageError
    if not args.quiet and context.gold is not None:
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
        for side in (args.csv, args.parquet):   # found unwritable now, not after the batch
            if side:
                open(side, "ab").close()
    except OSError as e:
        print(f"streameval replay: cannot write {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    try:
        return _write_all(args, jobs, context, out)
    finally:
        context.repos.close()  # the git cat-file processes of this process


def _run_live(args: argparse.Namespace, context: BatchContext) -> int:
    """``--live``: agent traces are played into a watched directory (see live/reenact)."""
    # here, not at the top: the watcher, its server and the page are ~0.25 s of imports
    # that a plain replay, the common case, never needs
    from streameval.playback.reenact import LiveTable, default_linger, reenact, traces_of

    traces = traces_of(args.inputs)   # named as replay names them: the same run ids
    if not traces:
        print("streameval replay --live: no trace files in " + " ".join(args.inputs),
              file=sys.stderr)
        return 1
    res = context.res
    listeners = [] if args.quiet else [LiveTable()]
    records = reenact(traces, res, host=args.host, port=args.port, speed=args.speed,
                      linger=default_linger(args.linger),
                      out=Path(args.out) if args.out else None, listeners=listeners,
                      announce=lambda msg: print(f"streameval replay --live: {msg}", flush=True))
    return _scored_code(records, args.allow_partial) if records else 1


def _write_all(args: argparse.Namespace, jobs: list[Job], context: BatchContext,
               out: IO[bytes]) -> int:
    progress = Progress(len(jobs), tty=sys.stderr.isatty(), quiet=args.quiet)
    emitter = otlp_options.emitter(args)   # UsageError before any work
    kept: list[dict[str, Any]] = []
    ids = RunIds()   # as the watcher hands them out: no two runs share a run id
    done = 0
    try:
        with Whole() as whole:
            for records in _engine(args, jobs, context):
                whole.hold()   # a record written is a record counted
                for record in records:
                    if record.get("run_id"):
                        record["run_id"] = ids.claim(record["run_id"], record.get("trace"),
                                                     str(record.get("instance_id")))
                    out.write(record_line(record))
                    if emitter is not None:
                        emitter.emit(from_record(record))
                    kept.append(_slim(record))
                done += 1
                whole.release()
                progress.update(sum("error" in r for r in records))
            out.flush()
    except KeyboardInterrupt:
        raise Interrupted(_kept(args, len(kept), done, len(jobs))) from None
    finally:
        progress.close()
        if args.out:
            out.close()
        otlp_options.close(emitter, "replay")

    if args.csv:
        report.write_benchkit_csv(kept, args.csv)
    if args.parquet:
        write_parquet(kept, args.parquet)
    if not args.quiet:
        table = report.format_table(report.aggregate(kept))
        print(table, end="", file=sys.stderr if not args.out else sys.stdout)
    code = _scored_code(kept, args.allow_partial)
    matched = say_outcomes("replay", context.res.outcomes, kept, args.quiet)
    measured = _gold_measured(args, kept)
    if code or not measured or not matched:
        return code or 1
    failures = fail_under(kept, args.fail_under) if args.fail_under else []
    for line in failures:
        print(f"streameval replay: --fail-under: {line}", file=sys.stderr)
    return 1 if failures else 0


def _kept(args: argparse.Namespace, written: int, done: int, total: int) -> str:
    """What an interrupted batch kept: the records of the inputs scored so far, written
    whole (the CSV, parquet and summary come only from a whole batch)."""
    dest = args.out or "stdout"
    text = (f"{written} of {total} records written to {dest}" if written == done else
            f"{written} records of {done} of {total} inputs written to {dest}")
    skipped = [o for o, given in (("--csv", args.csv), ("--parquet", args.parquet)) if given]
    return text + (f"; {' and '.join(skipped)} not written" if skipped else "")


def _scored_code(kept: list[dict[str, Any]], allow_partial: bool) -> int:
    """1 when not everything was scored, or a run was scored with a loud flag (its
    numbers may be wrong: docs/metrics.md §5b), said on stderr with the reasons;
    ``--allow-partial``: only when no run was scored. Else 0."""
    errors = [r for r in kept if "error" in r]
    loud = [r for r in kept if "error" not in r and loud_flags(r)]
    if not (errors or loud) or (allow_partial and len(errors) < len(kept)):
        return 0
    hint = "" if len(errors) == len(kept) else "; --allow-partial to exit 0 all the same"
    if errors:
        reasons = report.aggregate(errors)["errors_by_reason"]
        what = "no input" if len(errors) == len(kept) else f"{len(errors)} of {len(kept)} input(s)"
        print(f"streameval replay: {what} could {'' if errors == kept else 'not '}be scored "
              "(error records: " + ", ".join(f"{k} {v}" for k, v in reasons.items())
              + f"){hint}", file=sys.stderr)
    if loud:
        flags = Counter(f for r in loud for f in loud_flags(r))
        print(f"streameval replay: {len(loud)} of {len(kept)} run(s) scored, but their numbers "
              "may be wrong (" + ", ".join(f"{k} {v}" for k, v in sorted(flags.items()))
              + f"; docs/metrics.md §5b): {loud_reason(loud[0])}{hint}", file=sys.stderr)
    return 1


def _gold_measured(args: argparse.Namespace, kept: list[dict[str, Any]]) -> bool:
    """False (said on stderr) when gold was given and not one run was measured against
    it: every run is ``no_gold`` or ``no_repo`` (docs/metrics.md §5b), which is a wrong
    ``--gold``, wrong ids or a wrong ``--repos``, never a result."""
    scored = [r for r in kept if "error" not in r]
    if not gold_given(args) or not scored or any(not r.get("gold_missing") for r in scored):
        return True
    why = report.aggregate(scored)["without_gold_by_reason"]
    print(f"streameval replay: gold was given ({args.gold or args.gold_from_patch}) but no run "
          "was measured against it (" + ", ".join(f"{k} {v}" for k, v in why.items())
          + "): check the instance ids, the gold file and --repos", file=sys.stderr)
    return False


def _engine(args: argparse.Namespace, jobs: list[Job], context: BatchContext):
    """Each job's records in input order, from the engine asked for."""
    if getattr(args, "engine", "local") == "ray":
        from streameval.runs.ray_engine import evaluate_jobs_ray

        return evaluate_jobs_ray(jobs, context, sources(args), args.ray_address)
    return evaluate_jobs(jobs, context, sources(args), args.workers)


def _slim(record: dict[str, Any]) -> dict[str, Any]:
    """What the aggregates and the CSV need: a long run's per-step curve and its signals
    at the checkpoint steps are dropped from memory."""
    slim = {k: v for k, v in record.items() if k not in ("trajectory", "signals")}
    for key, drop in (("trajectory", "steps"), ("signals", "at_step")):
        block = record.get(key)
        if isinstance(block, dict):
            slim[key] = {k: v for k, v in block.items() if k != drop}
    return slim
