"""``streameval replay``: score recorded traces and unified predictions in a batch.

This module only orchestrates: it finds the inputs, splits them into one job per
instance, runs the jobs (in worker processes with ``--workers``), writes one JSONL record
per instance in input order, and hands the records to ``report`` for the summary table
and the Benchkit CSV. The numbers come from ``state.InstanceState`` -- the same code the
live watcher uses, so a replayed trace and a watched one agree.

ContextBench unified predictions are evaluated here directly (their steps are stated,
nothing to infer); every other trace format goes through ``session.evaluate_trace``.
A job that cannot be evaluated (no gold, no repository, unreadable input...) becomes an
``{"instance_id", "error"}`` record and the batch goes on (docs/metrics.md §5).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from streameval.errors import Reason, StreamevalError
from streameval.model import RunIdentity
from streameval.runs.evaluate import (
    Resources,
    evaluate_trace,
    load_resources,
    make_session,
    read_head,
    record_line,
)
from streameval.traces.formats.unified import (
    UnifiedError,
    UnifiedRecord,
    iter_unified_records,
    record_events,
)

#: File names that may hold a trace when a directory is given.
TRACE_SUFFIXES = (".jsonl", ".json", ".traj")


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from streameval.commands.options import (
        add_format,
        add_server,
        add_sources,
        non_negative_float,
        positive_float,
        positive_int,
    )

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
    context = _Context.build(*_sources(args))   # a file that cannot be used: UsageError
    if not args.quiet:
        for iid, message in context.gold.errors:
            print(f"streameval replay: gold row {iid}: {message}", file=sys.stderr)
    if getattr(args, "live", False):
        return _run_live(args, context)
    try:
        jobs = select_jobs(collect_jobs(args.inputs, args.fmt, args.instance),
                           args.shard, args.instance)
    except _UsageError as e:
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


def _run_live(args: argparse.Namespace, context: _Context) -> int:
    """``--live``: agent traces are played into a watched directory (see live/reenact)."""
    from streameval.playback.reenact import LiveTable, default_linger, reenact

    traces: list[Path] = []
    for item in args.inputs:
        p = Path(item)
        traces.extend(iter_trace_files(p) if p.is_dir() else [p])
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


def _write_all(args: argparse.Namespace, jobs: list[Job], context: _Context,
               out: IO[bytes]) -> int:
    from streameval.traces.identity import RunIds

    progress = Progress(len(jobs), enabled=not args.quiet and sys.stderr.isatty())
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
    from streameval.report import tables as report

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


# --------------------------------------------------------------------------- jobs


@dataclass(slots=True)
class TraceJob:
    """An agent trace file, evaluated by ``session.evaluate_trace`` (may hold several runs)."""

    path: str
    fmt: str
    instance: str | None  # --instance, when given
    key: str  # shard key: the run's instance id when meta.json/--instance give it, else path
    root: str | None = None  # the directory given, when the trace was found under one


@dataclass(slots=True)
class ErrorJob:
    """An input already known to be unusable; its record is ready."""

    record: dict[str, Any]


Job = UnifiedRecord | TraceJob | ErrorJob


class _UsageError(Exception):
    """Options that contradict each other (exit code 2, no records)."""


def _error(instance_id: str | None, reason: Reason | str, message: str,
           **extra: Any) -> dict[str, Any]:
    """An error record; ``error`` starts with the Reason value, as session's records do."""
    reason = reason.value if isinstance(reason, Reason) else reason
    text = message if message == reason else f"{reason}: {message}"
    return {"instance_id": instance_id, "error": text, **extra}


def iter_trace_files(root: Path) -> Iterator[Path]:
    """Trace-looking files under ``root``, sorted, skipping run-directory side files."""
    from streameval.traces.identity import walk_files

    for path in walk_files(root):
        if not path.name.startswith(".") and path.name.endswith(TRACE_SUFFIXES):
            yield path


def _trace_key(path: Path, instance: str | None) -> str:
    """The instance id a trace's run is known by before reading it, else its path.

    Only ``meta.json`` or ``--instance`` name it for sure; the directory-name fallback of
    ``identity.identify`` would put every trace of one directory in the same shard.
    """
    from streameval.traces.identity import META_NAME, identify  # the rules watch uses too

    if instance or (path.parent / META_NAME).is_file():
        return identify(path, instance).instance_id
    return str(path)


def _jobs_for_file(path: Path, fmt: str | None, instance: str | None,
                   root: Path | None = None) -> Iterator[Job]:
    if fmt is None:
        from streameval.traces.formats import detect_format

        try:
            fmt = detect_format(read_head(path))  # the head session.open_adapter reads
        except OSError as e:
            yield ErrorJob(_error(None, Reason.UNREADABLE_PREDICTION,
                                  f"cannot read {path}: {e.strerror or e}", source=str(path)))
            return
        except StreamevalError as e:
            yield ErrorJob(_error(None, e.reason, f"{path}: {e}", source=str(path)))
            return
    if fmt != "unified":
        yield TraceJob(str(path), fmt, instance, _trace_key(path, instance),
                       str(root) if root is not None else None)
        return
    for item in iter_unified_records(path):
        if isinstance(item, UnifiedError):
            yield ErrorJob(_error(item.instance_id, item.reason, item.message,
                                  source=item.position))
        else:
            yield item


def collect_jobs(inputs: Iterable[str], fmt: str | None = None,
                 instance: str | None = None) -> Iterator[Job]:
    """One job per instance, in input order (directories walked in sorted order)."""
    for name in inputs:
        root = Path(name)
        if root.is_dir():
            files = list(iter_trace_files(root))
            if not files:
                yield ErrorJob(_error(None, Reason.UNREADABLE_PREDICTION,
                                      f"no trace files (*.jsonl, *.json, *.traj) in {root}",
                                      source=str(root)))
            for path in files:
                yield from _jobs_for_file(path, fmt, instance, root)
        elif root.is_file():
            yield from _jobs_for_file(root, fmt, instance)
        else:
            yield ErrorJob(_error(None, Reason.UNREADABLE_PREDICTION,
                                  f"no such file or directory: {root}", source=str(root)))


def shard_of(key: str, n: int) -> int:
    """Stable shard of an instance: ``int(sha1(key)) % n`` (same on every machine)."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16) % n


def job_key(job: Job) -> str:
    if isinstance(job, UnifiedRecord):
        return job.instance_id
    if isinstance(job, TraceJob):
        return job.key
    return str(job.record.get("instance_id") or job.record.get("source") or "")


def select_jobs(jobs: Iterable[Job], shard: tuple[int, int] | None,
                instance: str | None) -> list[Job]:
    """Apply ``--shard`` and ``--instance``; ``--instance`` names one trace file's run."""
    jobs = list(jobs)
    traces = [j for j in jobs if isinstance(j, TraceJob)]
    if instance and len(traces) > 1:
        raise _UsageError(f"--instance names the instance of a single trace file, "
                          f"but {len(traces)} trace files were given")
    if instance:  # unified records of other instances go; unreadable ones may be it: kept
        jobs = [j for j in jobs if isinstance(j, TraceJob) or _job_id(j) in (None, instance)]
    if shard is not None:
        k, n = shard
        jobs = [j for j in jobs if shard_of(job_key(j), n) == k]
    return jobs


# --------------------------------------------------------------------------- evaluation


@dataclass(slots=True)
class _Context:
    """What every job needs, built once per process (gold, repositories, caches)."""

    res: Resources
    gold_path: str

    @property
    def gold(self) -> Any:
        return self.res.gold

    @property
    def repos(self) -> Any:
        return self.res.repos

    @classmethod
    def build(cls, gold_path: str, repos_dir: str | None, repo: str | None,
              tool_map: str | None = None, grammars: str | None = None) -> _Context:
        """Raises UsageError naming the gold, repository or map that cannot be used."""
        from streameval.errors import UsageError

        try:
            return cls(load_resources(gold_path, repos_dir, repo, tool_map, grammars), gold_path)
        except UsageError:
            raise
        except StreamevalError as e:   # its message names the file
            raise UsageError(str(e)) from None
        except OSError as e:
            raise UsageError(f"cannot read {e.filename or gold_path}: {e.strerror or e}") from None


_WORKER_CONTEXT: _Context | None = None


Sources = tuple[str, str | None, str | None, str | None, str | None]


def _sources(args) -> Sources:
    """What a worker process needs to build its own context: gold, repos, tool map and
    the grammar set (chosen once here, so every worker parses with the same)."""
    from streameval.sources.symbols import default_grammars

    return (args.gold, _text(args.repos), _text(args.repo), args.tool_map,
            getattr(args, "grammars", None) or default_grammars())


def _text(p: Any) -> str | None:
    return None if p is None else str(p)


def _init_worker(sources: Sources) -> None:
    global _WORKER_CONTEXT
    _WORKER_CONTEXT = _Context.build(*sources)


def _evaluate_in_worker(job: Job) -> list[dict[str, Any]]:
    assert _WORKER_CONTEXT is not None, "worker initializer did not run"
    return evaluate_job(job, _WORKER_CONTEXT)


def evaluate_jobs(jobs: list[Job], context: _Context,
                  sources: Sources, workers: int = 1) -> Iterator[list[dict[str, Any]]]:
    """Each job's records, in job order; with ``workers > 1`` each process builds its
    own context (gold, repositories, symbol index) once, in the pool initializer."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield evaluate_job(job, context)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: the parent may hold git subprocess pipes and threads.
    chunk = max(1, min(16, len(jobs) // (workers * 4)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker,
                             initargs=(sources,)) as pool:
        yield from pool.map(_evaluate_in_worker, jobs, chunksize=chunk)


def evaluate_job(job: Job, context: _Context) -> list[dict[str, Any]]:
    """The job's records (a trace file may hold several runs); never raises.

    A failure is an error record and the batch goes on.
    """
    try:
        if isinstance(job, ErrorJob):
            return [job.record]
        if isinstance(job, UnifiedRecord):
            return [evaluate_unified(job, context)]
        # never empty: a trace with no run in it is still one run (coverage 0)
        return evaluate_trace(job.path, context.res, fmt=job.fmt, instance=job.instance,
                              root=Path(job.root) if job.root else None)
    except StreamevalError as e:
        return [_error(_job_id(job), e.reason, str(e))]
    except Exception as e:  # a bug must not stop a batch of thousands; the record says it
        return [_error(_job_id(job), Reason.INTERNAL_ERROR,
                       f"while evaluating: {type(e).__name__}: {e}")]


def _job_id(job: Job) -> str | None:
    if isinstance(job, UnifiedRecord):
        return job.instance_id
    if isinstance(job, TraceJob):
        from streameval.traces.identity import identify

        return identify(Path(job.path), job.instance).instance_id
    return job.record.get("instance_id")


# --------------------------------------------------------------------------- unified


def evaluate_unified(rec: UnifiedRecord, context: _Context) -> dict[str, Any]:
    """One unified prediction record -> its docs/metrics.md §5 record, through the same
    session engine as every trace (the format's rules live in ``formats.unified`` and
    ``session``)."""
    identity = RunIdentity(instance_id=rec.instance_id, run_id=rec.instance_id)
    session = make_session(context.res, identity, "unified")
    if session.error is not None:
        return {"instance_id": rec.instance_id, "error": session.error}
    for event in record_events(rec):
        session.handle(event)
    return session.record()


# --------------------------------------------------------------------------- progress


class Progress:
    """A one-line ``\\r`` progress display on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, enabled: bool, stream: IO[str] | None = None):
        self.total, self.enabled = total, enabled
        self.stream = stream or sys.stderr
        self.done = self.errors = 0
        self.started = self._shown = time.monotonic()

    def update(self, errors: int) -> None:
        self.done += 1
        self.errors += errors
        now = time.monotonic()
        if self.enabled and (now - self._shown >= 0.1 or self.done == self.total):
            self._shown = now
            rate = self.done / max(now - self.started, 1e-9)
            self.stream.write(f"\r{self.done}/{self.total} instances, {self.errors} errors, "
                              f"{rate:.1f}/s ")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
