"""One run end to end: lay out its base commit, replay and score every call, tally.

streameval is fed the run's events exactly as ``replay``/``watch`` feed them
(``scoring.session.RunSession``): a ``StepBuilder`` over a ``GitRepo`` view of the base
commit, the run's cwd added as a root when the trace states one, sub-agent calls left
out. The replay takes the same calls in the same order (sub-agent calls too: they
changed the same files).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from streameval.model import RunEnd, RunInfo, ToolCall, TraceEvent
from streameval.reading.steps import StepBuilder
from streameval.sources.basetext import BaseTexts
from streameval.sources.repo import GitRepo
from truth.layout import git, lay_out
from truth.replay import NOT_READ_ONLY, CallTruth, Replayer
from truth.sandbox import Sandbox
from truth.score import BaseLines, CallScore, credited, ranges, score_call

EXAMPLES_PER_CLASS = 6


@dataclass
class RunSpec:
    """What to replay: the trace's events and where its base commit is."""

    name: str
    group: str
    fmt: str
    events: list[TraceEvent]
    gitdir: Path
    commit: str
    root: str


@dataclass
class Tally:
    """Counts of one group (an agent and format), and examples of each failure."""

    c: Counter[str] = field(default_factory=Counter)
    not_checkable: Counter[str] = field(default_factory=Counter)
    false: Counter[str] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)
    matches: Counter[str] = field(default_factory=Counter)
    #: what made the not-read-only read calls so (the first offending program)
    programs: Counter[str] = field(default_factory=Counter)
    #: base files the replay did not change as the agent's final patch does (one run)
    patch_differs: list[str] = field(default_factory=list)
    examples: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))

    def merge(self, other: Tally) -> None:
        for name in ("c", "not_checkable", "false", "missed", "matches", "programs"):
            getattr(self, name).update(getattr(other, name))
        for k, v in other.examples.items():
            room = EXAMPLES_PER_CLASS - len(self.examples[k])
            self.examples[k].extend(v[:max(room, 0)])

    def as_dict(self) -> dict:
        return {"counts": dict(self.c), "not_checkable": dict(self.not_checkable),
                "false_credits": dict(self.false), "missed": dict(self.missed),
                "matches": dict(self.matches), "not_read_only_by": dict(self.programs),
                "examples": dict(self.examples)}


def replay_run(spec: RunSpec, work: Path, timeout: float, texts: BaseTexts,
               repos: dict[Path, GitRepo], trimmed_shown: bool = False,
               ) -> tuple[Tally, list[dict]]:
    """Replay and score one run; returns its tally and one record per read call."""
    tally = Tally()
    t0 = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    try:
        layout = lay_out(spec.gitdir, spec.commit, work)
        tally.c["missing_blobs"] += len(layout.missing)
        tmp, home = work / "tmp", work / "home"
        tmp.mkdir(exist_ok=True)
        home.mkdir(exist_ok=True)
        objects = (layout.plain / ".git" / "objects" / "info" / "alternates").read_text().strip()
        sandbox = Sandbox(spec.root, tmp, home, ro_binds=(objects,), timeout=timeout)
        repo = repos.get(spec.gitdir)
        if repo is None:
            repo = repos[spec.gitdir] = GitRepo(spec.gitdir)
        view = repo.at(spec.commit)
        replayer = Replayer(layout, sandbox, spec.fmt, trimmed_shown)
        records = _replay_calls(spec, replayer, view, texts, tally)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tally.c["runs"] += 1
    tally.c["seconds_x1000"] += int(1000 * (time.perf_counter() - t0))
    return tally, records


def _replay_calls(spec, replayer: Replayer, view, texts, tally: Tally) -> list[dict]:
    layout = replayer.layout
    builder = StepBuilder(view, texts=texts)
    base = BaseLines(view)
    base_files = set(layout.base_digest)
    records: list[dict] = []
    index = 0
    for ev in spec.events:
        if isinstance(ev, RunInfo):
            if ev.cwd:
                builder.add_root(ev.cwd)
            continue
        if not isinstance(ev, ToolCall):
            continue
        index += 1
        truth = replayer.step(index, ev)
        tally.c["calls"] += 1
        if ev.sidechain:
            tally.c["sidechain_calls"] += 1
            continue
        outcome = builder.consume(ev)
        cred = credited(outcome)
        shows = any(o.path in base_files for o in truth.origins)
        if not (shows or cred):
            continue
        tally.c["read_calls"] += 1
        record = {"call": index, "tool": ev.tool, "kind": truth.kind,
                  "command": truth.command[:400],
                  "status": truth.status, "match": truth.match,
                  "credited": ranges(cred)}
        if not truth.checkable:
            if truth.problem:
                record["problem"] = truth.problem
            reason, _, detail = truth.status.partition(": ")
            tally.not_checkable[reason] += 1
            if reason == NOT_READ_ONLY:
                tally.programs[detail] += 1
            records.append(record)
            continue
        sc = score_call(truth, outcome, base)
        _count(tally, spec, truth, sc, record)
        records.append(record)
    tally.c["edits_not_redone"] += replayer.edit_failures
    patch = next((e.patch for e in spec.events if isinstance(e, RunEnd) and e.patch), None)
    if patch:
        tally.c["runs_with_patch"] += 1
        differ = patch_differences(layout.plain, patch)
        tally.c["patch_reproduced"] += not differ
        tally.patch_differs.extend(differ)
    return records


def _changes(diff: str) -> dict[str, list[str]]:
    """A diff's added and removed lines per file (hunk headers and ids aside)."""
    out: dict[str, list[str]] = {}
    name = ""
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            name = line.rsplit(" b/", 1)[-1]
            out.setdefault(name, [])
        elif line.startswith(("+++", "---")):
            continue
        elif line[:1] in ("+", "-"):
            out.setdefault(name, []).append(line.rstrip())
    return out


def patch_differences(plain: Path, patch: str) -> list[str]:
    """The base files the replay did not change as the agent's submission changes them
    (a check of the replay itself: its edits happened as the agent's did). New files are
    left out: build output and the like came from the agent's environment."""
    git("add", "-A", cwd=plain, check=False)
    ours = git("diff", "--cached", "HEAD", cwd=plain, check=False).stdout.decode(
        "utf-8", errors="replace")
    base = set(git("ls-tree", "-r", "--name-only", "HEAD", cwd=plain,
                   check=False).stdout.decode(errors="replace").split("\n"))
    mine = {k: v for k, v in _changes(ours).items() if k in base}
    theirs = {k: v for k, v in _changes(patch).items() if k in base}
    return sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))


def _count(tally: Tally, spec: RunSpec, truth: CallTruth, sc: CallScore, record: dict) -> None:
    c = tally.c
    c["checkable"] += 1
    c["exact"] += sc.exact
    tally.matches[truth.match] += 1
    right = len(sc.credited & sc.truth)
    c["lines_credited"] += len(sc.credited)
    c["lines_truth"] += len(sc.truth)
    c["lines_right"] += right
    c["lines_agent_shown"] += sc.agent_lines
    tally.false.update(sc.false)
    tally.missed.update(sc.missed)
    record.update(truth=ranges(sc.truth), exact=sc.exact, agent_lines=sc.agent_lines,
                  false=dict(sc.false), missed=dict(sc.missed))
    if sc.exact:
        return
    example = {"run": spec.name, "call": truth.index, "command": truth.command[:300],
               "credited": ranges(sc.credited), "truth": ranges(sc.truth),
               "credited_not_shown": ranges(sc.credited - sc.truth),
               "shown_not_credited": ranges(sc.truth - sc.credited),
               "agent_lines_shown": sc.agent_lines}
    for cls in list(sc.false) + [f"missed: {m}" for m in sc.missed]:
        key = cls if cls.startswith("missed") else f"false: {cls}"
        if len(tally.examples[key]) < EXAMPLES_PER_CLASS:
            tally.examples[key].append(example)
