"""``replay --engine ray``: a batch's jobs scored on a Ray cluster, records back in input
order, so ``--out``, the CSV and the tables are what a local run writes.

- **Grouped by repository.** Jobs are cut into chunks of one repository each, so the
  worker process that runs a chunk opens that repository and parses its symbols once;
  each worker process keeps its ``BatchContext`` (gold, repository caches, symbol index)
  for the next chunk, as a ``--workers`` pool process does.
- **Streamed back.** Chunks are submitted a few per CPU ahead of what is written; a
  finished chunk's records are handed on as soon as every job before them is done.
- **A failure is retried elsewhere, once.** When a chunk's task fails (its worker process
  or node died, or it raised), each of its jobs is submitted again as a task of its own,
  which Ray places on a live worker; a job whose second task fails too becomes a
  ``worker_lost`` error record (``Record.error``) and the batch goes on. A job never
  fails the batch.

Imported only when ``--engine ray`` is asked for: Ray is the ``streameval[ray]`` extra.
Every worker must see the trace files, gold and repositories at the same paths as the
driver (one machine, a shared volume, or an image that holds them: deploy/k8s).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.errors import Reason, UsageError
from streameval.runs.batch import (
    BatchContext,
    ErrorJob,
    Job,
    Sources,
    TraceJob,
    _job_id,
    evaluate_job,
)
from streameval.scoring.record import Record

log = logging.getLogger(__name__)

#: jobs in one task at most: enough to keep a repository warm, few enough to spread
CHUNK = 8
#: tasks a job may take: the first (in its chunk), then one of its own elsewhere
ATTEMPTS = 2
#: chunks in flight per CPU of the cluster: workers never wait for the driver
AHEAD_PER_CPU = 2

INSTALL_HINT = "--engine ray needs Ray: pip install 'streameval[ray]'"

#: per worker process: the contexts built, by sources (one in practice)
_CONTEXTS: dict[Sources, BatchContext] = {}


def _context(sources: Sources) -> BatchContext:
    ctx = _CONTEXTS.get(sources)
    if ctx is None:
        ctx = _CONTEXTS[sources] = BatchContext.build(*sources)
    return ctx


def evaluate_chunk(sources: Sources, jobs: list[Job]) -> list[list[Record]]:
    """The task body: each job's records, in the chunk's order (``evaluate_job`` never
    raises; building the context may, and then the whole chunk is retried)."""
    context = _context(sources)
    return [evaluate_job(job, context) for job in jobs]


@dataclass
class _Chunk:
    """Jobs (by their index in the batch) of one task, and how often each was tried."""

    indexes: list[int]
    attempt: int = 1
    ref: Any = None
    repo: str = ""


@dataclass
class RayStats:
    """What the driver saw: tasks run, jobs retried after a failure, jobs lost."""

    tasks: int = 0
    retried: int = 0
    lost: int = 0
    failures: list[str] = field(default_factory=list)


def repo_key(job: Job, context: BatchContext) -> str:
    """The repository a job reads: its gold row's, else (a trace whose instance is not
    known before reading it) its folder's, so a directory of runs stays together."""
    if isinstance(job, TraceJob):
        gold = context.gold.get(job.key) if job.key else None
        return (gold.repo if gold is not None and gold.repo else None) or str(Path(job.path).parent)
    iid = getattr(job, "instance_id", None)
    gold = context.gold.get(iid) if isinstance(iid, str) else None
    return (gold.repo if gold is not None and gold.repo else None) or ""


def plan(jobs: list[Job], context: BatchContext, chunk: int = CHUNK) -> list[_Chunk]:
    """Chunks of at most ``chunk`` jobs of one repository, repositories in the order they
    first appear (inputs usually list a repository's runs together, so the records wait
    little for their turn). Error jobs need no worker and are in no chunk."""
    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        if not isinstance(job, ErrorJob):
            groups.setdefault(repo_key(job, context), []).append(i)
    return [_Chunk(ids[k:k + chunk], repo=repo) for repo, ids in groups.items()
            for k in range(0, len(ids), chunk)]


def evaluate_jobs_ray(jobs: list[Job], context: BatchContext, sources: Sources,
                      address: str | None = None, stats: RayStats | None = None,
                      chunk: int = CHUNK) -> Iterator[list[Record]]:
    """Each job's records in job order, as ``batch.evaluate_jobs`` yields them; scored
    on the Ray cluster at ``address`` (None: Ray's own choice, ``RAY_ADDRESS`` or a new
    local instance). Raises UsageError when Ray is missing or cannot be reached."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    stats = stats if stats is not None else RayStats()
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False,
                     configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"cannot reach a Ray cluster at {address or 'RAY_ADDRESS'}: "
                             f"{exc}") from None
    try:
        yield from _drive(ray, jobs, context, sources, stats, chunk)
    finally:
        if started_here:
            ray.shutdown()


def _drive(ray, jobs: list[Job], context: BatchContext, sources: Sources,
           stats: RayStats, chunk: int) -> Iterator[list[Record]]:
    # no automatic retries: a failed chunk is split and each job retried once, alone
    task = ray.remote(max_retries=0, num_cpus=1)(evaluate_chunk)
    sources_ref = ray.put(sources)
    results: dict[int, list[Record]] = {i: [j.record] for i, j in enumerate(jobs)
                                        if isinstance(j, ErrorJob)}
    todo = plan(jobs, context, chunk)
    todo.reverse()                                   # popped from the end: input order
    ahead = max(2, AHEAD_PER_CPU * int(ray.cluster_resources().get("CPU", 1)))
    running: dict[Any, _Chunk] = {}
    next_out = 0

    def submit() -> None:
        while todo and len(running) < ahead:
            c = todo.pop()
            c.ref = task.remote(sources_ref, [jobs[i] for i in c.indexes])
            running[c.ref] = c
            stats.tasks += 1

    submit()
    while running or next_out < len(jobs):
        if not running and not todo and next_out not in results:
            raise AssertionError(f"ray engine: job {next_out} was never scheduled")
        if running:
            (ref,), _ = ray.wait(list(running), num_returns=1)
            c = running.pop(ref)
            try:
                for i, records in zip(c.indexes, ray.get(ref)):
                    results[i] = records
            except Exception as exc:  # noqa: BLE001 - a worker, node or task failure
                _failed(c, exc, jobs, results, todo, stats)
            submit()
        while next_out in results:
            yield results.pop(next_out)
            next_out += 1


def _failed(c: _Chunk, exc: BaseException, jobs: list[Job], results: dict[int, list[Record]],
            todo: list[_Chunk], stats: RayStats) -> None:
    """A chunk's task failed: each job is tried again alone, or, on its last attempt,
    becomes an error record."""
    what = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    stats.failures.append(what)
    log.warning("ray: a task of %d job(s) (%s) failed, attempt %d: %s", len(c.indexes),
                c.repo or "no repository", c.attempt, what)
    for i in c.indexes:
        if c.attempt < ATTEMPTS:
            stats.retried += 1
            todo.append(_Chunk([i], attempt=c.attempt + 1, repo=c.repo))
        else:
            stats.lost += 1
            job = jobs[i]
            results[i] = [Record.error(
                _job_id(job), Reason.WORKER_LOST,
                f"its worker failed {ATTEMPTS} times ({what}); evaluate it again alone",
                **({"trace": job.path} if isinstance(job, TraceJob) else {}))]


__all__ = ["RayStats", "evaluate_chunk", "evaluate_jobs_ray", "plan", "repo_key"]
