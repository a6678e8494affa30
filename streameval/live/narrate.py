"""The watcher says what it is doing: a line per thing that happens to a run or a file,
what it loaded when it starts, and a summary when it stops.

At INFO (the default): a run started (format, agent, model, instance), ended (why), its
record written (the key figures), a patch landed, a file read again from its first
byte (truncated, replaced, rewritten, reopened, renamed by its meta.json). Runs that
cannot be scored are said by the run table (a warning). At DEBUG (``-v``): every tool
call of every run, and every file under the root that is not a trace. ``-q`` keeps
warnings and errors only.

``Narration`` is the watcher's: followers tell it, and it keeps the counts the exit
summary gives. It only logs and counts; it decides nothing.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from streameval.model import GRANULARITIES
from streameval.reading.describe import describe_call
from streameval.sources.repocache import repo_dir_names

log = logging.getLogger("streameval.watch")

__all__ = ["Narration", "Tally", "record_figures", "start_line"]

#: file events worth a line: the file is read again from its first byte
REREAD = {"truncated": "was truncated", "replaced": "was replaced by another file",
          "rewritten": "was rewritten in place", "reopened": "grew after its run ended",
          "reidentified": "was renamed by its meta.json"}


def record_figures(record: dict) -> str:
    """A record's key figures on one line: steps, coverage and precision per
    granularity, EditLoc; or why the run was not scored, or measured against no gold."""
    if "error" in record:
        return f"not scored ({record['error'][:160]})"
    if record.get("gold_missing"):
        return (f"{record.get('num_steps', 0)} steps, {record.get('tool_calls', 0)} tool calls; "
                f"no gold ({record['gold_missing'][:160]})")
    final = record.get("final") or {}
    cov = " ".join(f"{g} {final[g]['coverage']:.2f}" for g in GRANULARITIES if g in final)
    prec = final.get("line", {}).get("precision")
    parts = [f"{record.get('num_steps', 0)} steps", f"coverage {cov}"]
    if prec is not None:
        parts.append(f"line precision {prec:.2f}")
    e = record.get("editloc")
    parts.append(f"editloc {e['recall']:.2f}" if e else "no patch")
    return "; ".join(parts)


#: files found to be no trace that are named at INFO; the rest at DEBUG (-v)
SAY_SKIPPED = 20
#: how runs ended, as the exit summary counts them (``run_ended``'s reasons)
ENDED_BY = {"end": "by the trace's end event", "idle": "idle for --idle-timeout",
            "deleted": "trace deleted", "played": "played to the end"}


class Narration:
    """Counts for the exit summary, and the lines said along the way."""

    def __init__(self) -> None:
        self.started_at = time.time()
        self.runs_started = 0
        self.ended: Counter = Counter()        # reason -> runs
        self.records = 0
        #: runs given a patch (beside the trace, predictions), each once while in memory
        self.patches = 0
        self._patched: set[str] = set()
        #: lines of the checkpoint's traces read again from their first byte at a restart
        #: (not counted in ``lines_processed``: they were counted before the restart)
        self.lines_restored = 0
        self.rereads: Counter = Counter()      # event -> files
        self.not_traces = 0
        #: records of runs measured against no gold, by why (no_gold, no_repo)
        self.gold_missing: Counter = Counter()
        #: records with a known outcome, and those resolved
        self.outcomes = [0, 0]
        #: session -> [said]: whether its "started" line is out (said with its first call)
        self._said: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ runs
    def run_started(self, session: Any, key: str, quiet: bool = False) -> None:
        """A new run: said with its first tool call (by then the trace has said which
        agent and model it is), or when it ends without one. Every call at DEBUG."""
        self.runs_started += 1
        said = [quiet]

        def on_call(s: Any, outcome: Any, call: Any) -> None:
            if not said[0]:
                said[0] = True
                self._say_started(s)
            if log.isEnabledFor(logging.DEBUG):
                snap = s.snapshot()
                cov = ""
                if outcome.step is not None and snap.scores is not None:
                    last = snap.scores.last_step_coverage
                    cov = " ".join(f"{g} {last.get(g, 0.0):.2f}" for g in GRANULARITIES)
                    cov = f" -> step {snap.num_steps}, coverage {cov}"
                log.debug("run %s call %d: %s %s [%s]%s", snap.run_id, snap.tool_calls,
                          call.tool, describe_call(call, 100), outcome.category, cov)

        session.listeners.append(on_call)
        self._said[session] = said

    def _say_started(self, session: Any) -> None:
        snap = session.snapshot()
        log.info("run %s started: %s trace of %s (model %s), instance %s, trace %s",
                 snap.run_id, snap.fmt or "unknown-format", snap.agent, snap.model,
                 snap.instance_id, snap.identity.trace)

    def run_ended(self, run: Any, reason: str, quiet: bool = False) -> None:
        self.ended[reason] += 1
        said = self._said.get(run.session, [True])
        if quiet:
            return
        if not said[0]:
            said[0] = True
            self._say_started(run.session)
        snap = run.session.snapshot()
        why = {"end": "the trace says it ended", "idle": "no growth for the idle timeout",
               "deleted": "its trace was deleted",
               "played": "its recording was played to the end"}.get(reason, reason)
        log.info("run %s ended (%s%s): %d tool calls, %d steps", snap.run_id, why,
                 f": {snap.end_reason}" if snap.end_reason and reason == "end" else "",
                 snap.tool_calls, snap.num_steps)

    def record_written(self, record: dict, out: Path | None) -> None:
        self.records += 1
        log.info("record of run %s written to %s: %s", record.get("run_id", record.get("instance_id")),
                 out, record_figures(record))
        if isinstance(record.get("resolved"), bool):
            self.outcomes[0] += 1
            self.outcomes[1] += record["resolved"]
        missing = record.get("gold_missing")
        if missing:
            reason = missing.split(":", 1)[0]
            if not self.gold_missing[reason]:   # once per reason; the summary counts them
                log.warning("run %s is measured against no gold (%s); its gold-free signals "
                            "are scored, its gold metrics are null", record.get("run_id"),
                            missing[:300])
            self.gold_missing[reason] += 1

    def patch_landed(self, session: Any, key: str, source: str, quiet: bool = False) -> None:
        """A patch changed what the run ``key``'s EditLoc is computed from: counted once
        per run (a run read again, a patch rewritten, are the same run's patch), said at
        DEBUG while a restarted watcher reads its runs again."""
        if key not in self._patched:
            self._patched.add(key)
            self.patches += 1
        log.log(logging.DEBUG if quiet else logging.INFO, "run %s: patch landed (%s); EditLoc "
                "is now final", session.identity.run_id, source)

    def forget(self, keys: Any) -> None:
        """Runs that left memory: a patch landing when one is read again counts anew."""
        self._patched.difference_update(keys)

    # ------------------------------------------------------------------ files
    def reread(self, path: Path, event: str, quiet: bool = False) -> None:
        """A file read again from its first byte; at DEBUG for a whole-document trace,
        which its agent saves again after every step (that is how it grows)."""
        if event not in REREAD:
            return
        self.rereads[event] += 1
        log.log(logging.DEBUG if quiet else logging.INFO, "%s %s: read again from its first byte",
                path, REREAD[event])

    def not_a_trace(self, path: Path, why: str) -> None:
        """A file named like a trace (``*.jsonl``, ``*.json``) whose content is none:
        said at INFO, for the first ``SAY_SKIPPED`` of them (a folder of other JSON would
        drown the log), then at DEBUG; the summary counts them all."""
        self.not_traces += 1
        if self.not_traces <= SAY_SKIPPED:
            more = " (further ones at -v)" if self.not_traces == SAY_SKIPPED else ""
            log.info("%s: skipped, not a trace (%s)%s", path, why, more)
        else:
            log.debug("%s: skipped, not a trace (%s)", path, why)

    # ------------------------------------------------------------------ start, stop
    def summary(self, watcher: Any, now: float | None = None) -> str:
        """What the watcher did, in one paragraph (printed when it stops)."""
        return self.counts(watcher).text(watcher.cfg.out, now)

    def counts(self, watcher: Any) -> Tally:
        """The exit summary's counts (the workers of ``watch --workers N`` send theirs
        to the supervisor, which adds them up: ``Tally.add``)."""
        st = watcher.table.stats
        active, finished = watcher.table.counts()
        return Tally(self.started_at, len(watcher.followers), st.lines_processed,
                     sum(st.bad_lines.values()), self.lines_restored, self.runs_started,
                     dict(self.ended), active, finished, dict(st.unscored), self.records,
                     self.patches, dict(self.gold_missing), list(self.outcomes),
                     self.not_traces, dict(self.rereads))


@dataclass
class Tally:
    """What the exit summary says, as numbers that add up over workers."""

    started_at: float
    followed: int = 0
    lines: int = 0
    bad: int = 0
    restored: int = 0
    runs_started: int = 0
    ended: dict[str, int] = field(default_factory=dict)
    active: int = 0
    finished: int = 0
    unscored: dict[str, int] = field(default_factory=dict)
    records: int = 0
    patches: int = 0
    gold_missing: dict[str, int] = field(default_factory=dict)
    #: records with a known outcome, and those resolved
    outcomes: list[int] = field(default_factory=lambda: [0, 0])
    not_traces: int = 0
    rereads: dict[str, int] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.started_at = min(self.started_at, other.started_at)
        for f in fields(self):
            if f.name == "started_at":
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                for k, n in theirs.items():
                    mine[k] = mine.get(k, 0) + n
            elif isinstance(mine, list):
                setattr(self, f.name, [a + b for a, b in zip(mine, theirs)])
            else:
                setattr(self, f.name, mine + theirs)

    def text(self, out: Path | None, now: float | None = None) -> str:
        """The summary, in one paragraph."""
        now = time.time() if now is None else now
        ended = f"{sum(self.ended.values())} ended" + (" (" + ", ".join(
            f"{n} {ENDED_BY.get(r, r)}" for r, n in sorted(self.ended.items())) + ")"
            if self.ended else "")
        unscored = ", ".join(f"{r} {n}" for r, n in sorted(self.unscored.items())) or "none"
        again = f"; {self.restored} read again after a restart" if self.restored else ""
        lines = [f"ran {_duration(now - self.started_at)}: {self.followed} trace file(s) "
                 f"followed, {self.lines + self.restored} lines read "
                 f"({self.bad} bad{again})",
                 f"runs: {self.runs_started} started, {ended}; {self.active} active and "
                 f"{self.finished} finished in memory; not scored: {unscored}",
                 f"records written: {self.records}"
                 + (f" to {out}" if out else " (no --out)")
                 + f"; patches landed: {self.patches}"]
        if self.gold_missing:
            lines.append("measured against no gold: " + ", ".join(
                f"{r} {n}" for r, n in sorted(self.gold_missing.items())))
        if self.outcomes[0]:
            lines.append(f"outcomes: {self.outcomes[1]} resolved of {self.outcomes[0]} records "
                         "with one")
        if self.not_traces:
            lines.append(f"files skipped, not traces: {self.not_traces}")
        if self.rereads:
            lines.append("files read again: " + ", ".join(
                f"{n} {e}" for e, n in sorted(self.rereads.items())))
        return "\n".join(lines)


def _duration(seconds: float) -> str:
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _repositories(res: Any) -> str:
    """Which repositories the gold needs were found (--repos), or the one --repo."""
    repos = getattr(res, "repos", None)
    if repos is None:
        return "repositories: none given"
    if repos.repo is not None:
        return f"repository: {repos.repo} for every run"
    if repos.repos_dir is None:
        return "repositories: none given (--repos DIR or --repo DIR)"
    try:
        present = {e.name.lower() for e in os.scandir(repos.repos_dir) if e.is_dir()}
    except OSError as exc:
        return f"repositories: cannot list {repos.repos_dir} ({exc.strerror or exc})"
    needed: dict[tuple[str, ...], bool] = {}
    for gold in res.gold or ():
        names = tuple(repo_dir_names(gold))
        if names and names not in needed:
            needed[names] = any(n.lower() in present for n in names)
    missing = [names[0] for names, ok in needed.items() if not ok]
    text = (f"repositories: {len(needed) - len(missing)} of the {len(needed)} the gold names "
            f"found in {repos.repos_dir}")
    if missing:
        text += f" (missing: {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})"
    return text


def start_line(cfg: Any, res: Any, gold: str | None) -> str:
    """What the watcher loaded and what it follows, said once when it starts."""
    rows = len(res.gold) if getattr(res, "gold", None) is not None else 0
    bad = len(res.gold.errors) if getattr(res, "gold", None) is not None else 0
    gold_text = f"gold: {rows} row(s) from {gold}" + (f" ({bad} unusable)" if bad else "")
    follows = ", ".join(cfg.globs)
    if cfg.sniff:
        follows += f", and any {', '.join(cfg.sniff)} whose content is a known trace format"
    return f"watching {cfg.root}: {gold_text}; {_repositories(res)}; following {follows}"
