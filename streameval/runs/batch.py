"""A batch of recorded inputs scored: one job per trace file or unified prediction,
split by ``--shard``, run in this process or a pool of workers, records in input order.

The numbers come from the same session engine the live watcher uses (``runs.evaluate``),
so a replayed trace and a watched one agree. A job that cannot be evaluated (a damaged
gold row, an unreadable input...) becomes an ``{"instance_id", "error"}`` record and the
batch goes on (docs/metrics.md §5); a trace without gold or repository is scored on its
gold-free signals (§5b).
"""

from __future__ import annotations

import hashlib
import signal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streameval.errors import Reason, StreamevalError
from streameval.model import RunIdentity
from streameval.runs.evaluate import evaluate_trace, make_session
from streameval.runs.resources import Resources, load_resources
from streameval.scoring.record import Record
from streameval.traces.files import read_head
from streameval.traces.formats.unified import (
    UnifiedError,
    UnifiedRecord,
    iter_unified_records,
    record_events,
)
from streameval.traces.identity import META_NAME, identify, walk_files
from streameval.traces.names import trace_extensions
from streameval.traces.parts import trace_of

#: File names that may hold a trace when a directory is given.
TRACE_SUFFIXES = trace_extensions()
_GLOBS = ", ".join(f"*{s}" for s in TRACE_SUFFIXES)


@dataclass(slots=True)
class TraceJob:
    """An agent trace file, evaluated by ``session.evaluate_trace`` (may hold several runs)."""

    path: str
    fmt: str
    instance: str | None  # --instance, when given
    key: str  # shard key: the run's instance id when meta.json/--instance give it, else path
    root: str | None = None  # the directory given, when the trace was found under one


@dataclass(slots=True)
class UnifiedJob:
    """One unified prediction, and the file it came from (``--label-from-path`` reads it)."""

    record: UnifiedRecord
    source: str | None = None

    @property
    def instance_id(self) -> str:
        return self.record.instance_id


@dataclass(slots=True)
class ErrorJob:
    """An input already known to be unusable; its record is ready."""

    record: Record


Job = UnifiedJob | TraceJob | ErrorJob


class JobSelectionError(Exception):
    """Options that contradict each other (the command's exit code 2, no records)."""


def iter_trace_files(root: Path) -> Iterator[Path]:
    """Trace-looking files under ``root``, sorted, skipping run-directory side files; a
    file that is part of a trace (``traces.parts``: an SDK event file, a sub-agent's
    transcript beside its session) gives its trace once, or nothing when that trace is
    a file found on its own."""

    owners: set[Path] = set()
    for path in walk_files(root):
        owner = trace_of(path)
        if owner != path:
            if owner.is_dir() and owner not in owners:
                owners.add(owner)
                yield owner
            continue
        if not path.name.startswith(".") and path.name.endswith(TRACE_SUFFIXES):
            yield path


def _trace_key(path: Path, instance: str | None) -> str:
    """The instance id a trace's run is known by before reading it, else its path.

    Only ``meta.json`` or ``--instance`` name it for sure; the directory-name fallback of
    ``identity.identify`` would put every trace of one directory in the same shard.
    """

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
            yield ErrorJob(Record.error(None, Reason.UNREADABLE_PREDICTION,
                                  f"cannot read {path}: {e.strerror or e}", source=str(path)))
            return
        except StreamevalError as e:
            yield ErrorJob(Record.error(None, e.reason, f"{path}: {e}", source=str(path)))
            return
    if fmt != "unified":
        yield TraceJob(str(path), fmt, instance, _trace_key(path, instance),
                       str(root) if root is not None else None)
        return
    for item in iter_unified_records(path):
        if isinstance(item, UnifiedError):
            yield ErrorJob(Record.error(item.instance_id, item.reason, item.message,
                                  source=item.position))
        else:
            yield UnifiedJob(item, str(path))


def collect_jobs(inputs: Iterable[str], fmt: str | None = None,
                 instance: str | None = None) -> Iterator[Job]:
    """One job per instance, in input order (directories walked in sorted order)."""
    for name in inputs:
        root = Path(name)
        if root.is_dir():
            files = list(iter_trace_files(root))
            if not files:
                yield ErrorJob(Record.error(None, Reason.UNREADABLE_PREDICTION,
                                      f"no trace files ({_GLOBS}) in {root}",
                                      source=str(root)))
            for path in files:
                yield from _jobs_for_file(path, fmt, instance, root)
        elif root.is_file():
            yield from _jobs_for_file(root, fmt, instance)
        else:
            yield ErrorJob(Record.error(None, Reason.UNREADABLE_PREDICTION,
                                  f"no such file or directory: {root}", source=str(root)))


def shard_of(key: str, n: int) -> int:
    """Stable shard of an instance: ``int(sha1(key)) % n`` (same on every machine)."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest(), 16) % n


def job_key(job: Job) -> str:
    if isinstance(job, UnifiedJob):
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
        raise JobSelectionError(f"--instance names the instance of a single trace file, "
                          f"but {len(traces)} trace files were given")
    if instance:  # unified records of other instances go; unreadable ones may be it: kept
        jobs = [j for j in jobs if isinstance(j, TraceJob) or _job_id(j) in (None, instance)]
    if shard is not None:
        k, n = shard
        jobs = [j for j in jobs if shard_of(job_key(j), n) == k]
    return jobs


# --------------------------------------------------------------------------- evaluation


@dataclass(slots=True)
class BatchContext:
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
    def build(cls, gold_path: str | None, repos_dir: str | None, repo: str | None,
              tool_map: str | None = None, grammars: str | None = None,
              gold_from_patch: str | None = None, patch_context: int = 0,
              labels: tuple[str, ...] = (), label_from_path: str | None = None,
              outcomes: str | None = None) -> BatchContext:
        """Raises UsageError naming the gold, repository, map, label or outcomes file
        that cannot be used."""
        return cls(load_resources(gold_path, repos_dir, repo, tool_map, grammars,
                                  gold_from_patch, patch_context, labels, label_from_path,
                                  outcomes),
                   gold_path or gold_from_patch or "")


_WORKER_CONTEXT: BatchContext | None = None


#: ``BatchContext.build``'s arguments: what a worker process needs to build its own
Sources = tuple[str | None, str | None, str | None, str | None, str | None, str | None, int,
                tuple[str, ...], str | None, str | None]


def _init_worker(sources: Sources) -> None:
    global _WORKER_CONTEXT
    # Ctrl-C is the parent's: it stops the pool and says what was kept. A worker that took
    # it too printed a KeyboardInterrupt traceback after the parent's last line (seen in CI
    # when it landed while a worker was still starting). The worker was started with SIGINT
    # blocked (``_ctrl_c_held``): ignored from here, a Ctrl-C already pending is dropped.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER_CONTEXT = BatchContext.build(*sources)


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """SIGINT blocked in this thread while the pool starts its workers: a blocked signal
    stays blocked across fork and exec, so a worker cannot take a Ctrl-C before its
    initializer ignores it; here the signal waits and is taken on leaving (none is lost)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _evaluate_in_worker(job: Job) -> list[Record]:
    assert _WORKER_CONTEXT is not None, "worker initializer did not run"
    return evaluate_job(job, _WORKER_CONTEXT)


def evaluate_jobs(jobs: list[Job], context: BatchContext,
                  sources: Sources, workers: int = 1) -> Iterator[list[Record]]:
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
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(sources,))
    try:
        with _ctrl_c_held():   # map submits every job now: the workers start here
            results = pool.map(_evaluate_in_worker, jobs, chunksize=chunk)
        yield from results
    except BaseException:
        # Ctrl-C (or the consumer gone) must reach the caller as itself: a Ctrl-C while the
        # pool was starting its manager thread made ``with``'s shutdown raise "cannot join
        # thread before it is started" in its place
        try:   # waited for: a worker's last words come before the caller's
            pool.shutdown(cancel_futures=True)
        except RuntimeError:
            pass
        raise
    pool.shutdown()


def evaluate_job(job: Job, context: BatchContext) -> list[Record]:
    """The job's records (a trace file may hold several runs); never raises.

    A failure is an error record and the batch goes on.
    """
    try:
        if isinstance(job, ErrorJob):
            return [job.record]
        if isinstance(job, UnifiedJob):
            return [evaluate_unified(job.record, context, job.source)]
        # never empty: a trace with no run in it is still one run (coverage 0)
        return evaluate_trace(job.path, context.res, fmt=job.fmt, instance=job.instance,
                              root=Path(job.root) if job.root else None)
    except StreamevalError as e:
        return [Record.error(_job_id(job), e.reason, str(e))]
    except Exception as e:  # a bug must not stop a batch of thousands; the record says it
        return [Record.error(_job_id(job), Reason.INTERNAL_ERROR,
                       f"while evaluating: {type(e).__name__}: {e}")]


def _job_id(job: Job) -> str | None:
    if isinstance(job, UnifiedJob):
        return job.instance_id
    if isinstance(job, TraceJob):
        from streameval.traces.identity import identify

        return identify(Path(job.path), job.instance).instance_id
    return job.record.get("instance_id")


# --------------------------------------------------------------------------- unified


def evaluate_unified(rec: UnifiedRecord, context: BatchContext,
                     source: str | None = None) -> dict[str, Any]:
    """One unified prediction record -> its docs/metrics.md §5 record, through the same
    session engine as every trace (the format's rules live in ``formats.unified`` and
    ``session``). ``source`` is the predictions file (its path may carry labels)."""
    res = context.res
    identity = res.labels.apply(RunIdentity(instance_id=rec.instance_id, run_id=rec.instance_id),
                                source)
    if res.outcomes is not None:
        identity = res.outcomes.apply(identity)
    session = make_session(res, identity, "unified")
    if session.error is not None:
        return Record.error(rec.instance_id, session.error)
    for event in record_events(rec):
        session.handle(event)
    return session.record()
