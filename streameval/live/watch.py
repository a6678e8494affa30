"""``streameval watch DIR``: follow every agent trace under a directory, live.

One ``TraceFollower`` per trace file. ``watchfiles`` tells which files changed (the
directory is watched, so files that do not exist yet are seen when they appear); a
periodic rescan is the safety net for missed events. A ticker ends idle runs, writes
records whose patch has landed (or whose grace period passed), drops finished runs
after a while, and checkpoints.

Restarts: the checkpoint stores, per trace, its inode and size read and a digest of
every record already written. A restarted watcher re-reads each trace from its first
byte (scoring is deterministic, so every number comes out the same) and writes only
records that differ from what was written before: nothing is lost, nothing counted
twice.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streameval import sane
from streameval.config import DEFAULT_HOST, DEFAULT_PORT
from streameval.fileio import append_whole
from streameval.live import halt, resume
from streameval.live.claims import ClaimLog, claims_path
from streameval.live.declare import declaration
from streameval.live.follow import TraceFollower
from streameval.live.narrate import Narration
from streameval.live.outputs import Digests, SharedDigests
from streameval.live.passed import Passed, Rescans
from streameval.live.paths import DEFAULT_GLOBS, SNIFF_GLOBS, file_key, is_trace, path_kind
from streameval.live.predictions import Predictions
from streameval.live.shard import Shard
from streameval.live.table import RunTable
from streameval.live.watchset import NotTraces, OutsideLinks
from streameval.runs.resources import Resources
from streameval.scoring.record import record_line
from streameval.traces.identity import META_NAME, PATCH_NAMES, walk_files
from streameval.traces.parts import trace_of

log = logging.getLogger(__name__)

@dataclass(slots=True)
class WatchConfig:
    root: Path
    globs: tuple[str, ...] = DEFAULT_GLOBS
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    out: Path | None = None
    predictions: Path | None = None
    idle_timeout: float = 300.0
    patch_grace: float = 30.0
    keep_finished: float = 3600.0
    #: runs in memory at most; the oldest finished (record written) are evicted first
    max_runs: int = 10_000
    checkpoint: Path | None = None
    checkpoint_interval: float = 5.0
    fmt: str | None = None
    include_sidechain: bool = False
    sniff: tuple[str, ...] = SNIFF_GLOBS
    rescan_interval: float = 5.0
    tick_interval: float = 0.2
    force_polling: bool = False
    #: watchfiles grouping: changes are handed over at most ``debounce_ms`` after the
    #: first one, or once ``step_ms`` pass without a new one. Both bound the
    #: write-to-export lag (benchmarks/live.md: 50/20 gave a p50 of ~110 ms with 1,000
    #: traces, 20/5 about 40 ms); batching matters little, a change costs ~10 us.
    debounce_ms: int = 20
    step_ms: int = 5
    #: follow trace files that are links to outside ``root`` (``watchset.OutsideLinks``)
    follow_outside_links: bool = False


def _counting_clamps(method: Callable) -> Callable:
    """Values clamped while the watcher works (reading traces, writing records) are
    counted in its own statistics (``streameval_clamped_values_total``)."""
    @functools.wraps(method)
    def wrapper(self: Watcher, *args: Any, **kw: Any) -> Any:
        with sane.counting(self.table.stats.clamped):
            return method(self, *args, **kw)
    return wrapper


class Watcher:
    """Owns the followers; every method runs on the watcher's one event-loop thread.

    ``shard``: this watcher is one worker of several (``watch --workers N``): it follows
    the traces that are its own (``live.shard``), its run ids are the supervisor's, and
    it reads the ``foreign`` checkpoints too (``resume``)."""

    def __init__(self, cfg: WatchConfig, res: Resources, table: RunTable | None = None,
                 shard: Shard | None = None, foreign: list[Path] = ()):
        self.cfg = cfg
        self.res = res
        self.table = table or RunTable(keep_finished_seconds=cfg.keep_finished)
        self.shard = shard
        self.foreign = list(foreign)
        if shard is not None:
            self.table.run_ids = shard.run_ids
        self.followers: dict[Path, TraceFollower] = {}
        #: (device, inode) -> follower: a file found at a new path is the run it was
        self._by_file: dict[tuple[int, int], TraceFollower] = {}
        #: first path -> follower of a trace since moved (abort actions find it there)
        self.moved: dict[Path, TraceFollower] = {}
        #: files whose runs left memory, while a rescan may come across them
        self.passed = Passed()
        self.rescans = Rescans(cfg.rescan_interval)
        self._predictions = Predictions(cfg.predictions)
        self.predictions = self._predictions.patches
        self._last_checkpoint = 0.0
        self.started_at = time.time()
        #: digests of records in --out (all read at restore, then the recent ones):
        #: a record is never written twice
        self.out_digests = (Digests if shard is None else SharedDigests)(keep=max(10_000, 4 * cfg.max_runs))
        self.listeners: list = []   # called with the watcher after each processed batch
        #: called between two files of a batch, where no step is being read (the freezer)
        self.between_files: list = []
        self.tick_hooks: list = []  # called with (watcher, now) at every tick (abort policies)
        #: name -> (save, load): state kept in the checkpoint by other parts (abort
        #: decisions acted on); ``load`` must accept anything, the file may be edited
        self.journals: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {}
        #: what the watcher says and the counts of its exit summary (live/narrate.py)
        self.narration = Narration()
        #: sniffed files found to be no trace
        self.not_traces = NotTraces()
        #: the run ids handed out, kept across a restart (the checkpoint and a file beside)
        self.claims = ClaimLog(self.table.run_ids, cfg.checkpoint if shard is None else None,
                               cfg.root, self.table.stats.output_errors)
        self.journals["run_ids"] = (self.claims.journal, self.claims.restore_journal)
        self._own_files = {Path(p).resolve() for p in (
            cfg.out, cfg.checkpoint, cfg.predictions,
            claims_path(cfg.checkpoint) if cfg.checkpoint else None, *self.foreign) if p is not None}
        #: when ``start`` was done: runs met later are listed after those met in it (``join``)
        self.started_through = float("inf")
        #: what every worker meets under the root is said by the first
        self.says_walk = shard is None or shard.index == 0
        self.links = OutsideLinks(cfg.root, cfg.follow_outside_links, self.says_walk)
        #: --out failed at its last write (a full disk): said once, not at every retry
        self._out_failing = False
        if res.repos is not None and hasattr(res.repos, "caches"):
            self.table.caches.extend(res.repos.caches())
        if res.symbols is not None:
            self.table.caches.append(("symbols", res.symbols))

    # ------------------------------------------------------------------ discovery
    def is_trace(self, path: Path) -> bool:
        return (is_trace(path, self.cfg.globs) or self._sniffed(path)) and self.links.allowed(path)

    # -------- files followed for their content (SNIFF_GLOBS), and those that were not
    def _sniffed(self, path: Path) -> bool:
        """A name of ``cfg.sniff`` not of ``cfg.globs``, not the watcher's own files, and
        not a file already found to be no trace (unless replaced or cut since)."""
        if not self.cfg.sniff or not is_trace(path, self.cfg.sniff):
            return False
        return path not in self._own_files and not self.not_traces.known(path)

    def _not_trace(self, f: TraceFollower) -> None:
        self.not_traces.add(f.path)
        self._forget(f)

    @_counting_clamps
    def scan(self) -> int:
        """Find trace files not yet followed (start-up and periodic safety net). After
        the first walk, only files changed or made since the previous one began are
        looked at, and those that passed through unchanged are skipped (``passed``)."""
        found = 0
        self.rescans.begin(time.time())
        horizon = self.rescans.horizon
        for p in walk_files(self.cfg.root):
            owner = trace_of(p)
            if owner != p:   # part of a trace: a conversation's event, a sub-agent's file
                if owner.is_dir() and owner not in self.followers and path_kind(owner) == "file" \
                        and self._mine(owner):
                    self.follow(owner)
                    found += 1
                continue
            if p in self.followers or not self.is_trace(p):
                continue
            try:
                st = os.stat(p)
            except OSError:
                continue   # gone since the walk listed it
            if not stat.S_ISREG(st.st_mode) or self.passed.unchanged(st):
                continue
            if horizon is not None and max(st.st_mtime, st.st_ctime) < horizon:
                continue
            if not self._mine(p):
                continue
            self.follow(p)
            found += 1
        self.rescans.end()
        if self.rescans.horizon is not None:
            self.passed.prune(self.rescans.horizon)
        return found

    def _hidden(self, path: Path) -> bool:
        root = str(self.cfg.root)
        text = str(path)
        rel = text[len(root):] if text.startswith(root) else text
        return "/." in rel[: rel.rfind("/")] if "/" in rel else False

    def _mine(self, path: Path) -> bool:
        """A file not followed yet is this worker's to follow (always, for one watcher)."""
        return self.shard is None or self.shard.take(path)

    def follow(self, path: Path, named: Path | None = None) -> TraceFollower:
        """Follow the trace at ``path``; when it is a file already followed under another
        path that no longer holds it (renamed, or its directory was), that follower
        moves with it: one run, its name and run id as first given."""
        key = file_key(path)
        known = self._by_file.get(key) if key is not None else None
        if known is not None and known.path != path and file_key(known.path) != key:
            return self._move(known, path)
        f = TraceFollower(path, self.table, self.res, fmt=self.cfg.fmt,
                          include_sidechain=self.cfg.include_sidechain,
                          predictions=self.predictions, root=self.cfg.root,
                          admit=self.links.opened)
        if named is not None and Path(named) != path:
            self._note_move(f, path, named)
        f.lag_since = self.started_at
        f.file_key = key
        f.narration = self.narration
        f.tentative = not is_trace(path, self.cfg.globs)
        f.on_not_trace = self._not_trace
        f.counted_before(self.passed.lines(key))
        self.followers[path] = f
        if key is not None:
            self._by_file[key] = f
        self.table.stats.events["appeared"] += 1
        return f

    def _move(self, f: TraceFollower, path: Path) -> TraceFollower:
        old = f.path
        del self.followers[old]
        if self.shard is not None:
            self.shard.moved(old, path)
        self._note_move(f, path)
        self.followers[path] = f
        self.table.stats.events["moved"] += 1
        log.info("%s moved to %s: its runs go on as %s", old, path, f.key_path)
        return f

    def _note_move(self, f: TraceFollower, path: Path, named: Path | None = None) -> None:
        f.move(path, named)
        if f.key_path != f.path:
            self.moved[f.key_path] = f
        else:
            self.moved.pop(f.key_path, None)

    def _forget(self, f: TraceFollower) -> None:
        """Drop a follower and every index that names it."""
        if self.followers.pop(f.path, None) is not None and self.shard is not None:
            self.shard.let_go(f.path)
        self.moved.pop(f.key_path, None)
        if self._by_file.get(f.file_key) is f:
            del self._by_file[f.file_key]

    def trace_of(self, key_path: Path) -> Path:
        """Where the trace first seen at ``key_path`` is now."""
        f = self.moved.get(key_path)
        return f.path if f is not None else key_path

    # ------------------------------------------------------------------ pushed runs
    def processed_up_to(self, path: Path) -> int:
        """Bytes of ``path`` read and scored (ingest waits on it; read from its thread,
        two ints, no lock needed)."""
        f = self.followers.get(path)
        return f.tail.offset - f.tail.pending if f is not None else -1

    def steer_reason(self, path: Path) -> str | None:
        """Why a policy stopped a run of ``path``, for a hook-connected agent. Read
        without the table lock (a dict lookup and an attribute, atomic under the GIL):
        a hook's answer never waits behind the watcher scoring a long tool call."""
        f = self.followers.get(path)
        if f is None:
            return None
        runs = self.table.runs
        for key in f.run_keys():
            run = runs.get(key)
            if run is not None and run.steer:
                return run.steer
        return None

    # ------------------------------------------------------------------ changes
    @_counting_clamps
    def handle_changes(self, changes, now: float | None = None) -> None:
        """One watchfiles batch of (path, deleted): listeners (abort policies, which
        look at every run) are told once per batch, not once per file."""
        now = time.time() if now is None else now
        # what appeared first: a rename is (deleted, added) in one batch, and the file
        # found at its new path takes its run along before the old path is given up
        for path, deleted in sorted(changes, key=lambda change: bool(change[1])):
            self.changed(Path(path), deleted=deleted, now=now, notify=False)
            self._between()
        self._after_batch()

    def changed(self, path: Path, deleted: bool = False, now: float | None = None,
                notify: bool = True) -> None:
        now = time.time() if now is None else now
        if self._hidden(path):
            return   # as the walk: a hidden directory's files (a spool's staging) are not traces
        if self._side_file(path, now, notify):
            return
        owner = trace_of(path)
        part = owner != path
        if part:
            if not owner.is_dir():
                return   # a sub-agent's transcript: its session file carries its calls
            path = owner   # an event file: its conversation directory is the trace
        f = self.followers.get(path)
        if f is None and self.shard is not None and not deleted and not self.shard.mine(path):
            return   # another worker's (every worker is told of every file)
        if (deleted or f is not None) and path_kind(path) == "missing" or \
                f is not None and not self.links.allowed(path):
            # a "deleted" event is believed only while the file is really gone: a trace
            # renamed away and created anew gives (deleted, added) in one unordered
            # batch, and the new file's run must not be ended by the old file's event.
            # A trace that is now a link out of the root is let go too
            if f is not None:
                self._deleted(f, now)
            return
        if f is None:
            kind = path_kind(path)
            if kind == "other" and not deleted and os.path.isdir(path):
                self._dir_appeared(path, now)   # a run directory moved or copied in
                return
            if not (part or self.is_trace(path)) or kind != "file" \
                    or self._passed_unchanged(path) or not self._mine(path):
                return
            f = self.follow(path)
        f.poll(now)
        if notify:
            self._after_batch()

    def _side_file(self, path: Path, now: float, notify: bool) -> bool:
        """A patch, a meta.json or the predictions changed: handled (True)."""
        if path.name in PATCH_NAMES:
            self._patch_changed(path, now)
        elif path.name == META_NAME:
            self._meta_changed(path, now)
            if notify:
                self._after_batch()
        elif self.cfg.predictions is not None and path == self.cfg.predictions:
            self.poll_predictions()
        else:
            return False
        return True

    def _passed_unchanged(self, path: Path) -> bool:
        try:
            return self.passed.unchanged(os.stat(path))
        except OSError:
            return False

    def _dir_appeared(self, directory: Path, now: float) -> None:
        if directory.name.startswith("."):
            return   # hidden, as the walk has it (the spool's staging)
        for p in walk_files(directory):
            owner = trace_of(p)
            if owner != p:   # part of a trace (a conversation's event file)
                if owner.is_dir() and owner not in self.followers and path_kind(owner) == "file" \
                        and self._mine(owner):
                    self.follow(owner).poll(now)
                    self._between()
                continue
            if p not in self.followers and self.is_trace(p) and path_kind(p) == "file" \
                    and self._mine(p):
                self.follow(p).poll(now)
                self._between()

    def _deleted(self, f: TraceFollower, now: float) -> None:
        self.table.stats.events["deleted"] += 1
        f.finish("deleted", now)
        self._write_due(f, now, force=True)
        self._forget(f)

    def _meta_changed(self, meta_path: Path, now: float) -> None:
        """A meta.json written after its trace renames the run: replay of the
        finished file would use it, so the trace is scored again under it."""
        for f in list(self.followers.values()):
            if f.path.parent == meta_path.parent and f.identity != f.current_identity():
                f.restart("reidentified")
                f.poll(now)

    def _patch_changed(self, patch_path: Path, now: float) -> None:
        """A patch beside a trace: its runs get it, also runs that left memory (their
        file is read again, with the patch): a record written without EditLoc is owed
        its correction whenever the patch lands, across restarts too."""
        for p in self._traces_in(patch_path.parent):
            f = self.followers.get(p)
            if f is None and not self._mine(p):
                continue   # another worker's trace: its patch is that worker's to land
            if f is None or f.reader is None:
                f = f or self.follow(p)
                if f.reader is None and f.closed:
                    f.restart("reopened")
                f.poll(now)
                self.table.stats.events["patch_landed"] += 1
            else:
                f.land_patch()

    def _traces_in(self, directory: Path) -> list[Path]:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return []
        return [directory / n for n in names
                if self.is_trace(directory / n) and path_kind(directory / n) == "file"]

    @_counting_clamps
    def poll_all(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        for f in list(self.followers.values()):
            if path_kind(f.path) == "missing":
                self._deleted(f, now)
                continue
            f.poll(now)
            if f.awaits_patch():
                f.land_patch()   # its file event may have come while nothing watched
            self._between()
        self._after_batch()

    def _grew_unseen(self, f: TraceFollower, now: float) -> bool:
        """One last read before a run ends as idle: an append whose file event never
        came (its directory was renamed just before) is growth, and its lines are the
        run's; ending the run would score it without them."""
        if path_kind(f.path) == "missing":
            return False
        grew = f.poll(now) > 0
        if grew:
            self._after_batch()
        return grew

    def _between(self) -> None:
        """Between two files' reads: no step is being read."""
        for hook in self.between_files:
            hook()

    def _after_batch(self) -> None:
        for listener in self.listeners:
            listener(self)

    # ------------------------------------------------------------------ predictions
    @_counting_clamps
    def poll_predictions(self) -> None:
        """SWE-bench predictions JSONL (instance_id, model_patch): patches landing."""
        self._predictions.poll(self.table, self.narration)

    # ------------------------------------------------------------------ ticking
    @_counting_clamps
    def tick(self, now: float | None = None) -> None:
        """End idle runs, write due records, expire old runs, checkpoint."""
        now = time.time() if now is None else now
        written = 0
        self.table.stats.backlog_bytes = sum(f.tail.backlog for f in self.followers.values())
        for f in list(self.followers.values()):
            if f.closed and f.reader is None:
                continue   # finished and released
            if f.reader is not None and not f.closed and f.ended_by_trace():
                f.finish("end", now)
            if not f.closed and now - f.last_growth > self.cfg.idle_timeout \
                    and not self._grew_unseen(f, now):
                # a file whose format was never known ends too: its record is the
                # error replay gives for it
                f.finish("idle", now)
            if f.reader is not None:
                written += self._write_due(f, now, save=False)
            self._between()
        if written:
            # once per tick, not per file: thousands of runs ending together (an idle
            # timeout after a restart) would each rewrite the whole checkpoint
            self.save_checkpoint()
        for hook in self.tick_hooks:
            hook(self, now)
        # a run still owing its record (patch grace longer than keep_finished) stays
        # until it is written: expired earlier, it would never be
        gone = self.table.expire(now, hold=lambda run: not run.record_written,
                                 max_runs=self.cfg.max_runs)
        self.narration.forget(gone)
        # every tick, not only when something expired now: a multi-run file may close
        # (idle) after its runs already left the table
        self._release_expired()
        if self.rescans.due(now):
            # the safety net for file events missed (e.g. lines written before
            # watchfiles started watching): find new files and poll every file
            self.scan()
            self.poll_predictions()
            self.poll_all(now)
        if self.cfg.checkpoint and now - self._last_checkpoint >= self.cfg.checkpoint_interval:
            self.save_checkpoint()
            self._last_checkpoint = now

    def _release_expired(self) -> None:
        """Followers whose runs all left the table (records written) are forgotten:
        nothing of a run that passed through stays but a line in ``passed`` while a
        rescan may still come across its file."""
        done = [f for f in self.followers.values() if f.closed and not f.live_runs()]
        for f in done:
            f.release()
            self.passed.remember(f.file_key, str(f.path), f.lines_counted)
            self._forget(f)

    def _write_due(self, f: TraceFollower, now: float, force: bool = False,
                   save: bool = True) -> int:
        grace = 0.0 if force else self.cfg.patch_grace
        with self.table.lock:
            n = f.due_records(now, grace, self._write_record, self.out_digests)
        if n and save:
            # a record written is never written again after a crash (--out's
            # digests, read at restore, cover a crash before this save)
            self.save_checkpoint()
        return n

    def _write_record(self, record: dict) -> None:
        """Append one record line, whole or not at all.

        Opened per record: records are rare (one per finished run), no handle outlives
        a crash, and the line is on disk when we return. A failed write (ENOSPC, EIO)
        is cut back off the file, logged and counted, and raised so the run's record
        is tried again at the next tick.
        """
        if self.cfg.out is None:
            return
        line = record_line(record)
        try:
            append_whole(self.cfg.out, line, shared=self.shard is not None)
            self.out_digests.wrote(line)
            self.narration.record_written(record, self.cfg.out)
            halt.reached("record-written")
        except OSError as exc:
            self.table.stats.output_errors["out"] += 1
            if not self._out_failing:   # once per outage, not at every tick's retry
                log.error("cannot write a record to %s (%s); retried at every tick",
                          self.cfg.out, exc)
            self._out_failing = True
            raise
        if self._out_failing:
            self._out_failing = False
            log.warning("%s is written again", self.cfg.out)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> None:
        resume.save(self)

    @_counting_clamps
    def _counted(self, fn: Callable, *args: Any) -> Any:
        return fn(*args)

    @_counting_clamps
    def restore_checkpoint(self) -> int:
        """Resume the runs a previous watcher was following; returns how many files."""
        return resume.restore(self)

    def start(self) -> None:
        """What a watcher does before it follows changes: resume the runs of the
        checkpoint, read the predictions, find every trace under the root and read it.
        Run ids restored that no run asked for again then go (their trace is gone)."""
        if self.shard is None:
            self.restore_checkpoint()
            self.poll_predictions()
            self.scan()
        else:
            # every trace found first, the ids their runs will ask for told (``declare``),
            # then read: which run gets an id bare is then one watcher's choice
            restored: list[TraceFollower] = []
            self._counted(resume.restore, self, restored)
            self.poll_predictions()
            self.scan()
            self.shard.declare(declaration(list(self.followers.values())))
            self._counted(resume.read_again, self, restored)
        self.poll_all()
        self.table.run_ids.drop_restored()
        self.started_through = time.time()
        if self.shard is not None:
            self.shard.started()
        halt.reached("started")

    def close(self) -> None:
        self.save_checkpoint()
        self.claims.close()
