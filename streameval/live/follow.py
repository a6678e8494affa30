"""One watched trace file: its tail, its adapter, its runs and the records they owe.

The follower is deliberately synchronous and free of I/O scheduling: the watcher
decides *when* to poll; the follower decides *what* a poll means (format detection,
truncation and replacement restarts, closing the adapter when the run is over,
re-opening when a finished file grows again). Every restart re-reads the file from
its first byte with a fresh adapter and sessions, so a watched run's numbers are
always those of replaying the file as it stands.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Container
from pathlib import Path

from streameval.errors import Reason, TraceFormatError
from streameval.live import halt
from streameval.live.narrate import Narration
from streameval.live.outputs import record_digest
from streameval.live.table import LiveRun, RunTable, run_key
from streameval.model import RunIdentity
from streameval.runs.evaluate import make_session, run_identity
from streameval.runs.reader import TraceReader
from streameval.runs.resources import Resources
from streameval.scoring.session import RunSession
from streameval.traces.files import HEAD_LINES, open_tail
from streameval.traces.formats import adapter_class, detect_format
from streameval.traces.formats.base import Adapter
from streameval.traces.identity import identify, patch_beside, trace_name
from streameval.traces.tail import DEFAULT_MAX_LINE, READ_CHUNK, Admit

log = logging.getLogger(__name__)

POLL_BYTES = READ_CHUNK   # bytes of trace taken per lock hold when catching up
#: trace lines processed per hold of the table lock
LOCK_LINES = 64
#: lines kept while a file's format is not known yet (most are blank, or a document's)
HEAD_KEEP = 10_000


def _grew_at(now: float, mtime: float | None) -> float:
    """When the file last grew: its mtime (a file read again after a restart, or after
    its runs left memory, has been idle since then, not since now), never the future."""
    return now if mtime is None else min(now, mtime)


class TraceFollower:
    """Lines of one trace file -> sessions in the run table -> records once runs end."""

    # slots, not a dict: a watcher keeps a follower for each of its thousands of runs,
    # and a full garbage collection walks a dict's keys too (issue 27)
    __slots__ = ("_counted", "_first_read", "_head", "_replaying", "closed", "document",
                 "file_key", "fmt", "forced_fmt", "format_error", "identity",
                 "include_sidechain", "instance", "key_path", "lag_since", "last_growth",
                 "moved_to", "narration", "not_a_trace", "on_not_trace", "path", "predictions",
                 "reader", "res", "restoring", "root", "run_per_line", "table", "tail",
                 "tentative", "unknown_format", "written")

    def __init__(self, path: Path, table: RunTable, res: Resources, *, fmt: str | None = None,
                 instance: str | None = None, include_sidechain: bool = False,
                 predictions: dict[str, str] | None = None,
                 max_line: int = DEFAULT_MAX_LINE, root: Path | None = None,
                 admit: Admit | None = None):
        self.path = Path(path)
        #: where the trace was first seen: its runs' keys, name and run ids stay those of
        #: this path when the file is moved (``move``); ``path`` is where it is now
        self.key_path = self.path
        self.root = root   # the watched directory: traces are named relative to it
        self.table = table
        self.res = res
        self.forced_fmt = fmt
        self.instance = instance
        self.include_sidechain = include_sidechain
        self.predictions = predictions if predictions is not None else {}
        # a file, or an SDK conversation directory read event file by event file; each
        # file a poll opens is first shown to ``admit`` (the watcher's links rule)
        self.tail = open_tail(self.path, max_line=max_line, admit=admit)
        self.fmt: str | None = None
        self.document = False
        #: the format's every line is one whole run (``Adapter.run_per_line``)
        self.run_per_line = False
        self.reader: TraceReader | None = None
        self.closed = False              # adapter closed because the run ended
        self.unknown_format = False
        #: why the format is unknown, as replay's error record says it
        self.format_error: str | None = None
        self._head: list[tuple[bytes, int]] = []
        self.last_growth = time.time()
        #: reading what the file held when it was (re)opened: it last grew at its mtime
        self._first_read = True
        self.identity: RunIdentity = identify(self.path, instance, root=root)
        #: where the trace now lives, relative to the root, once it was moved
        self.moved_to: str | None = None
        #: (device, inode) the watcher found it as
        self.file_key: tuple[int, int] | None = None
        #: run key -> digest of the last record written for it (checkpointed)
        self.written: dict[str, str] = {}
        self.restoring = False           # re-reading after a restart: lines not re-counted
        #: highest line number of this file's content already counted: a finished file
        #: that grows is re-read from its first byte, and its old lines are not
        #: counted again (lines_processed_total, bad_lines_total, lag)
        self._counted = 0
        self._replaying = False
        #: lines of a file last written before this time are backlog, not lag: the
        #: watcher sets its start time (a restart without checkpoint must not report
        #: days of lag for old traces, as a checkpoint restore already does not)
        self.lag_since = 0.0
        # -------- what the watcher says (live/narrate.py), set by the watcher
        self.narration: Narration | None = None
        #: followed for a sniffed name (``*.jsonl``, ``*.json``): content of no known
        #: format makes it ``not_a_trace``, quietly (no warning, counter or record)
        self.tentative = False
        self.not_a_trace = False
        #: told when the file turns out not to be a trace (the watcher drops it)
        self.on_not_trace: Callable[[TraceFollower], None] | None = None

    def _tell(self, what: str, *args, **kw) -> None:
        """Say ``what`` happened (``Narration.<what>``) when the watcher listens."""
        if self.narration is not None:
            getattr(self.narration, what)(*args, **kw)

    # ------------------------------------------------------------------ sessions
    def _factory(self, trace_instance: str | None, session_id: str | None) -> RunSession:
        n = len(self.reader.sessions) if self.reader is not None else 0
        ident = run_identity(self.identity, trace_instance, n, self.res,
                             explicit=self.instance is not None, trace=self.key_path,
                             session_id=session_id)
        # two traces never share a label set (copies of one session, one meta.json run id)
        ident.run_id = self.table.run_ids.claim(ident.run_id, ident.trace, ident.instance_id)
        if self.format_error is not None:
            session = RunSession(ident, fmt="", error=self.format_error)
        else:
            session = make_session(self.res, ident, self.fmt or "",
                                   include_sidechain=self.include_sidechain)
        key = run_key(self.key_path, n)
        if session.error is not None:
            self.table.unscored(key, ident, session.error)
        self.table.add(LiveRun(key=key, session=session))
        self._tell("run_started", session, key, quiet=self.restoring)
        if n == 1:
            self._unland_file_patch(self.reader.sessions[0], run_key(self.key_path, 0))
        self._land_patch(session, key, beside=n == 0)
        return session

    def _land_patch(self, session: RunSession, key: str, beside: bool = True) -> None:
        # a patch beside the trace belongs to the file's run only when the file holds
        # one run (as ``evaluate_trace`` decides): never to the runs of output.jsonl
        patch = patch_beside(self.path) if beside else None
        if patch:
            self._set_patch(session, key, patch, "file", "patch beside the trace")
        pred = self.predictions.get(session.identity.instance_id)
        if pred:
            self._set_patch(session, key, pred, "predictions", "predictions file")

    def _set_patch(self, session: RunSession, key: str, patch: str, source: str,
                   where: str) -> bool:
        """Land ``patch`` on a run; said (and counted) when it changed its EditLoc."""
        if not session.set_patch(patch, source):
            return False
        self._tell("patch_landed", session, key, where, quiet=self.restoring)
        halt.reached("patch-landed")
        return True

    def _unland_file_patch(self, session: RunSession, key: str) -> None:
        """The file turned out to hold several runs: its first run loses the patch
        beside the trace it was given while it looked like the only one."""
        if session.patch_source == "file":
            session.patch = session.patch_source = None
            session.version += 1
            self._land_patch(session, key, beside=False)

    def run_keys(self) -> list[str]:
        if self.reader is None:
            return []
        return [run_key(self.key_path, i) for i in range(len(self.reader.sessions))]

    def live_runs(self) -> list[LiveRun]:
        runs = self.table.runs
        return [runs[k] for k in self.run_keys() if k in runs]

    def _drop_runs(self) -> None:
        for key in self.run_keys():
            self.table.remove(key)

    def release(self) -> None:
        """Forget the sessions of a finished file whose runs expired from the table.

        The follower stays ``closed``: if the file grows again it is scored anew from
        its first byte (``reopened``), exactly as before; ``written`` is kept, so a
        record already written is not written again.
        """
        self.reader = None
        self._head = []

    @property
    def lines_counted(self) -> int:
        """Lines of this file counted in the watcher's statistics so far."""
        return self._counted

    def counted_before(self, lines: int) -> None:
        """The file passed through before with ``lines`` counted: read again, they are
        not counted again."""
        self._counted = max(self._counted, lines)

    def current_identity(self) -> RunIdentity:
        """The identity meta.json now gives, under the name first given."""
        return identify(self.path, self.instance, root=self.root, named=self.key_path)

    def move(self, path: Path, named: Path | None = None) -> None:
        """The file is now at ``path`` (renamed, or its directory was): its runs go on,
        under the keys, names and run ids first given (``named``: the name a restored
        follower was first given, from the checkpoint)."""
        if named is not None:
            self.key_path = Path(named)
        self.path = Path(path)
        self.tail.path = str(self.path)
        self.moved_to = None if self.path == self.key_path else trace_name(self.path, self.root)
        self.identity = self.current_identity()

    # ------------------------------------------------------------------ polling
    def restart(self, event: str) -> None:
        """Start the trace again from its first byte (re-opened, re-identified)."""
        self._start_over(event)
        self.tail.reset()
        self._first_read = True

    def _start_over(self, event: str) -> None:
        """Forget the runs and the format: the file is read anew (the tail says from where)."""
        self.table.stats.events[event] += 1
        self._tell("reread", self.path, event, quiet=self.document)
        self._drop_runs()
        self.reader, self.fmt, self.closed, self._head = None, None, False, []
        self.run_per_line = False
        self.unknown_format = False  # the new content may well be a trace
        self.format_error = None
        self.identity = self.current_identity()

    def poll(self, now: float | None = None) -> int:
        """Process what was appended; returns the number of lines handled.

        A large backlog (a restart, a watcher that fell behind) is taken
        ``POLL_BYTES`` at a time, the table lock released in between: memory stays
        bounded and scrapes are not held up for the whole catch-up.
        """
        now = time.time() if now is None else now
        ended = self.ended_by_trace()
        total = self._poll(now)
        if not ended and not self.closed and self.ended_by_trace():
            halt.reached("end-read")
        return total

    def _poll(self, now: float) -> int:
        if self.document and self.fmt is not None:
            return self._poll_document(now)
        fresh = self.fmt is None
        total = 0
        while True:
            batch = self.tail.poll(max_bytes=POLL_BYTES)
            n, stop = self._take(batch, now)
            total += n
            if stop or not batch.more:
                break
        self._first_read = False
        if fresh and self.document and self.fmt is not None and not self.closed:
            # the format was detected just now, line by line: a document adapter only
            # buffers until ``close``, so read the document whole now, or a trace that
            # never changes again (finished before the watcher started, restored after
            # a restart, rewritten by truncation) would never be scored
            self._reread_document()
        return total

    def _take(self, batch, now: float) -> tuple[int, bool]:
        """Process one tail batch: (lines handled, whether polling is over)."""
        if batch.status == "missing":
            return 0, True
        if batch.status in ("truncated", "replaced", "rewritten"):  # the tail starts over
            self._start_over(batch.status)
            if not (self.document and batch.status in ("truncated", "rewritten")):
                self._counted = 0  # new content: its lines are new
        if not batch.lines and not batch.too_long:
            return 0, False
        if self.closed:  # a finished run's file grew again: score the whole file anew
            self.restart("reopened")
            return self.poll(now), True
        self.last_growth = _grew_at(now, batch.mtime) if self._first_read else now
        lines = batch.ordered()   # a line too long to hold is None, in its place
        # the lock per slice of lines, not per megabyte: a scrape or another file's
        # batch gets in between (and one long tool call is served stale, not waited on)
        for start in range(0, len(lines), LOCK_LINES):
            with self.table.lock:
                for line, lineno in lines[start:start + LOCK_LINES]:
                    self._line(line, lineno, now, batch.mtime)
        return len(lines), False

    def _line(self, line: bytes | None, lineno: int, now: float, mtime: float | None) -> None:
        st = self.table.stats
        self._replaying = self.restoring or lineno <= self._counted
        if not self._replaying:
            st.lines_processed += 1
        self._counted = max(self._counted, lineno)
        try:
            self._feed(line, lineno)
        finally:
            # lag: from the line's write time to when its numbers are ready, so a stall
            # in processing shows, not only a slow file event
            if not self._replaying and mtime is not None and mtime >= self.lag_since:
                st.observe_lag(time.time() - mtime)

    def _feed(self, line: bytes | None, lineno: int) -> None:
        if line is None and self.reader is None:
            self._bad(lineno, Reason.LINE_TOO_LONG, "line longer than the limit, skipped")
            return
        if self.reader is None:
            if self.unknown_format or len(self._head) >= HEAD_KEEP:
                return   # given up (its record says so when the run ends)
            self._head.append((line, lineno))
            if not self._detect():
                return
            head, self._head = self._head, []
            for hl, hn in head:
                self.reader.feed_line(hl, hn)
            return
        self.reader.feed_line(line, lineno)

    def _on_bad(self, bad) -> None:
        # a document is read again whole at every save, half-written ones included: its
        # bad lines are counted once, from the read its run finishes on (``finish``)
        if not self.restoring and not self._replaying and not self.document:
            self.table.stats.bad_lines[str(bad.reason)] += 1

    def _bad(self, lineno: int, reason: Reason, message: str) -> None:
        """A bad line before any run exists (the format not known yet)."""
        if not self._replaying:
            self.table.stats.bad_lines[reason.value] += 1
            log.warning("%s:%d: %s", self.path, lineno, message)

    def _detect(self) -> bool:
        """Pick the adapter once enough of the head is known."""

        head = [ln for ln, _ in self._head if ln.strip()]
        if not head:
            return False
        try:
            name = self.forced_fmt or detect_format(head[:HEAD_LINES])
        except TraceFormatError as exc:
            # fewer lines than replay looks at: more may come (a BOM or junk first line,
            # a pretty-printed document's "{" alone); decided for good at HEAD_LINES, or
            # when the run ends (``finish``) on everything the file then holds
            if len(head) < HEAD_LINES:
                return False
            self._give_up(exc)
            return False
        self._use(name)
        return True

    def _give_up(self, exc: TraceFormatError) -> None:
        if self.tentative:
            self._not_a_trace("its content is no trace format streameval reads")
            return
        if not self.unknown_format:
            self.unknown_format = True
            self.format_error = f"{exc.reason.value}: {exc}"
            self.table.stats.bad_lines[Reason.UNKNOWN_FORMAT.value] += 1
            log.warning("%s: unknown trace format; not followed (pass --format)", self.path)

    def _not_a_trace(self, why: str) -> None:
        """A sniffed file that is no trace: dropped with one debug line."""
        if self.not_a_trace:
            return
        self.unknown_format = self.not_a_trace = self.closed = True
        self._head = []
        self._tell("not_a_trace", self.path, why)
        if self.on_not_trace is not None:
            self.on_not_trace(self)

    def _use(self, name: str) -> None:
        cls = adapter_class(name)
        self.fmt = name
        self.reader = TraceReader(cls(), self._factory, on_bad=self._on_bad)
        self.document = bool(cls.document)  # a document replaced by a JSONL trace is not one
        self.run_per_line = cls.run_per_line   # every line one run: an end ends that run

    def _detect_at_end(self) -> None:
        """The run ended before its format was known: decide on all the file holds, its
        last line too (a compact document often has no newline), as replay does. Still
        unknown: the run's record is the error replay gives."""

        lines = self._head + self.tail.poll(final=True).ordered()
        self._head = []
        head = [ln for ln, _ in lines if ln is not None and ln.strip()][:HEAD_LINES]
        try:
            self._use(self.forced_fmt or detect_format(head))
        except TraceFormatError as exc:
            self._give_up(exc)
            if self.not_a_trace:
                return
            self.reader = TraceReader(_Nothing(), self._factory)
            self.document = False
            return
        if self.document:
            self.closed = False
            self._reread_document()
            return
        for line, lineno in lines:
            self.reader.feed_line(line, lineno)

    def _poll_document(self, now: float) -> int:
        """Whole-document formats are re-read whole whenever they change."""
        batch = self.tail.poll()
        if batch.status == "missing" or (not batch.lines and batch.status == "ok"
                                         and not self.tail.pending):
            return 0
        if batch.status in ("truncated", "replaced", "rewritten"):
            # as for any trace: counted, and the new content read (and its format
            # detected) from its first byte; but a document saved again in place is
            # the same document, its lines already counted are not counted again
            self._start_over(batch.status)
            if batch.status == "replaced":   # another file now: its lines are new
                self._counted = 0
            self.tail.reset()
            return self.poll(now)
        self.last_growth = _grew_at(now, batch.mtime) if self._first_read else now
        self._first_read = False
        return self._reread_document()

    def _reread_document(self) -> int:
        with self.table.lock:
            self._drop_runs()
            self.tail.reset()
            self.reader = None
            self.closed = False
            lines = self.tail.poll(final=True).ordered()
            if not self._detect_from([item for item in lines if item[0] is not None]):
                return 0
            for line, lineno in lines:
                self.reader.feed_line(line, lineno)
            self.reader.close(final=False)   # saved mid-run: its end is decided in ``finish``
            # each line of the document counted once, however often it is saved
            last = lines[-1][1] if lines else 0
            if last > self._counted and not self.restoring:
                self.table.stats.lines_processed += last - self._counted
            self._counted = max(self._counted, last)
        return len(lines)

    def _detect_from(self, lines: list[tuple[bytes, int]]) -> bool:
        self._head = list(lines[: HEAD_LINES * 4])
        ok = self._detect()
        self._head = []
        return ok

    # ------------------------------------------------------------------ ending
    def finish(self, reason: str, now: float | None = None) -> None:
        """The run is over (end event, idle timeout, deleted): flush the adapter."""
        now = time.time() if now is None else now
        with self.table.lock:
            if self.reader is None and not self.closed and reason != "end":
                self._detect_at_end()
            if reason == "end" and self.run_per_line:
                for run in self.live_runs():
                    if run.finished_at is None and run.session.ended:
                        run.finished_at = now
                        self._tell("run_ended", run, reason, quiet=self.restoring)
                return
            if self.reader is not None and not self.closed:
                if self.tail.pending:
                    batch = self.tail.poll(final=True)   # its last line may be cut
                    for line, lineno in batch.lines:
                        self.reader.feed_line(line, lineno, unterminated=lineno == batch.cut)
                if not self.document:
                    self.reader.close()
                else:
                    self.reader.ends()
                    if not self.restoring:   # the bad lines of the document's last read
                        for s in self.reader.sessions:
                            self.table.stats.bad_lines.update(s.snapshot().bad_lines)
                self.closed = True
                self.reader.shed()
            ended = [run for run in self.live_runs() if run.finished_at is None]
            for run in ended:
                run.finished_at = now
                # only a deleted file (which can no longer be replayed) says so in its
                # record: an idle one's record must stay the replayed one, byte for
                # byte, and replay knows no idle timeout
                if run.session.end_reason is None and reason == "deleted":
                    run.session.end_reason = reason
                self._tell("run_ended", run, reason, quiet=self.restoring)
            if ended:
                halt.reached("run-ended")
            # a patch already beside the trace ends the wait for it now, even if its
            # file event never came (written while the watcher was starting)
            self.land_patch()

    def ended_by_trace(self) -> bool:
        """True when the format's end event has arrived for the file's last run."""
        s = self.reader.current if self.reader is not None else None
        return s is not None and s.ended

    def due_records(self, now: float, patch_grace: float,
                    write: Callable[[dict], None], already: Container[str] = frozenset()) -> int:
        """Write the record of every finished run whose patch landed or whose grace passed.

        A record already written is written again only when it changed (a patch that
        landed late): the last line for a run is the one that counts.
        """
        n = 0
        looked = False
        for run in self.live_runs():
            if run.finished_at is None:
                continue
            s = run.session
            if run.checked_version == s.version:
                s.settle()   # read since (a page, a late export): kept as bytes again
                continue  # unchanged since its record was written: not rebuilt every tick
            if s.final_patch is None and now - run.finished_at < patch_grace:
                continue
            if not looked:
                # the patch beside the trace as it is now, once per file, whatever file
                # events were missed: a patch there before the record is written is in it
                looked = True
                self.land_patch()
            record = s.record()
            if self.moved_to is not None:
                record["trace_moved_to"] = self.moved_to   # run_id and trace as first given
            if "error" in record:   # decided at the run's end (a cut trace...): counted
                self.table.unscored(run.key, s.identity, record["error"])
            digest = record_digest(record)
            run.checked_version = s.version
            if self.written.get(run.key) == digest or digest in already:
                self.written[run.key] = digest
                run.record_written = True
                continue
            try:
                write(record)
            except OSError:
                # not written (a full disk, logged and counted by the writer): tried
                # again at the next tick, and the other runs wait for the disk too
                run.checked_version = None
                break
            self.written[run.key] = digest
            run.record_written = True
            self.table.settled(run)
            if self.closed or self.run_per_line:
                run.session.release_reading()   # no line will reach it again
                run.session.settle()
            n += 1
        return n

    def land_patch(self) -> bool:
        """A patch file appeared or changed beside the trace; or it may have, unseen (its
        file event came while the watcher was starting): read it again."""
        changed = False
        with self.table.lock:
            if self.reader is None or len(self.reader.sessions) != 1:
                return False  # several runs in one file: the patch beside is none of theirs
            patch = patch_beside(self.path)  # read once, not once per run
            for run in self.live_runs():
                if patch and self._set_patch(run.session, run.key, patch, "file",
                                             "patch beside the trace"):
                    changed = True
        if changed:
            self.table.stats.events["patch_landed"] += 1
        return changed

    def awaits_patch(self) -> bool:
        """A run of the file ended without a patch beside the trace (one may come)."""
        return any(r.finished and r.session.patch_source != "file" for r in self.live_runs())


class _Nothing(Adapter):
    """The adapter of a file whose format is unknown: it yields no events, so the one
    run the reader makes at close carries the format error as its record."""

    def feed(self, line: bytes, lineno: int) -> list:
        return []

    def close(self) -> list:
        return []
