"""One engine for every way a run is scored: trace events -> steps -> metrics.

``RunSession`` turns the events of one agent run into Steps (through
``reading.steps.StepBuilder``) and feeds them to ``state.InstanceState``, keeping the
live extras of docs/metrics.md §7 beside. ``tracefile`` feeds it: replay, watch,
inspect and unified predictions all score runs through this one class.

The record carries only what the trace itself says (trace timestamps, never the
time lines arrived), so it does not depend on how fast the file was read.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streameval.errors import Reason
from streameval.intervals import IntervalSet
from streameval.model import (
    GRANULARITIES,
    BadLine,
    RunEnd,
    RunIdentity,
    RunInfo,
    StatedContext,
    Step,
    TokenUsage,
    ToolCall,
    TraceEvent,
    Usage,
)
from streameval.reading.paths import resolve_step
from streameval.scoring import verdict
from streameval.scoring.dormant import Dormant
from streameval.scoring.editloc import editloc
from streameval.scoring.localisation import FileRanking
from streameval.scoring.record import Record, error_record
from streameval.scoring.signals import RunSignals, SignalValues, gold_row, is_checkpoint
from streameval.scoring.snapshot import FirstGoldRead, RunSnapshot, UsageSoFar, token_counts
from streameval.scoring.state import InstanceState
from streameval.scoring.usage import TokenSums
from streameval.scoring.verdict import RunFacts
from streameval.sources.repocache import repo_named

if TYPE_CHECKING:
    from streameval.reading.steps import StepBuilder

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RunExtras:
    """Live extras of one run (docs/metrics.md §7); all from the trace itself."""

    tool_calls: int = 0
    sidechain_calls: int = 0
    categories: Counter = field(default_factory=Counter)
    context_file_reads: Counter = field(default_factory=Counter)
    bad_lines: Counter = field(default_factory=Counter)
    #: the first message of each bad-line reason: where a cut or an unread action was
    first_bad: dict[str, str] = field(default_factory=dict)
    problems: Counter = field(default_factory=Counter)
    #: reads of file contents (listings aside), and those naming no repository file or folder
    named_paths: int = 0
    outside_paths: int = 0
    #: reads whose text was checked where they say it is, and those not finding it there
    reads_checked: int = 0
    reads_mismatching: int = 0
    edits: int = 0
    #: shown lines by how they were credited (docs/metrics.md, "Alignment"): placed on a
    #: base line by their text, the agent's own (no base counterpart), or credited from
    #: the command's window without text (no output kept, no repository)
    lines_aligned: int = 0
    lines_agent_written: int = 0
    lines_unaligned: int = 0
    #: reads of repository files per tool name (a context engine's share shows here)
    reads_by_tool: Counter = field(default_factory=Counter)
    tokens: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    first_gold_file_step: int | None = None
    first_gold_line_step: int | None = None
    first_gold_file_seconds: float | None = None
    first_gold_line_seconds: float | None = None
    started_at: float | None = None
    last_event_at: float | None = None

    def shown_lines(self) -> dict[str, int]:
        """The three outcomes under the names records and ``/metrics`` use."""
        return {"aligned": self.lines_aligned, "agent_written": self.lines_agent_written,
                "unaligned": self.lines_unaligned}


class RunSession(Dormant):
    """Everything known about one run, updated one event at a time. Once its record is
    written it may be kept as bytes until read again (``settle``, ``scoring.dormant``).

    ``gold``/``view`` may be None (``inspect`` without gold, or a run whose gold or
    repo is missing): steps are still built where possible. ``gold_missing`` says why
    a run has neither (``no_gold: ...``, ``no_repo: ...``: docs/metrics.md §5b): its
    record holds its gold-free signals with its gold metrics null. Otherwise
    ``record()`` returns an error record with ``error`` set to the actionable reason.
    ``repo``: the repository a gold row named when its clone is missing.
    """

    def __init__(self, identity: RunIdentity, gold=None, view=None, symbols=None, *,
                 fmt: str = "", include_sidechain: bool = False, error: str | None = None,
                 texts=None, tools=None, states_context: bool = False,
                 gold_missing: str | None = None, repo: str | None = None):
        self.identity = identity
        self.gold = gold
        self.view = view
        self.fmt = fmt
        #: the format states its context (unified predictions: ``Adapter.states_context``,
        #: told by the caller, since scoring knows no formats): the record is the
        #: evaluator's shape, with its rule for a final context that resolves to nothing
        self.states_context = states_context
        self.include_sidechain = include_sidechain
        self.error = error
        self.gold_missing = gold_missing
        self._repo = repo
        self._reading = (texts, tools)
        self._builder: StepBuilder | None = None
        self._released = False
        self.state = None
        if gold is not None and view is not None and error is None:
            self.state = InstanceState(gold, view, symbols)
        self.extras = RunExtras()
        self.signals = RunSignals()
        self._tokens = TokenSums()
        self._gold_files, self._gold_lines = _gold_context_sets(gold)
        #: the files shown, in the order first shown (docs/metrics.md §7b); its first
        #: gold milestone is the first gold file read (§7)
        self.ranking = FileRanking(self._gold_files)
        self.trace_info = RunInfo()
        self.last_call: ToolCall | None = None
        self.ended = False
        self.end_reason: str | None = None
        #: the end event the trace's shape always ends with, when it ended without it
        self.missing_end: str | None = None
        self.trace_patch: str | None = None
        self.patch: str | None = None
        self.patch_source: str | None = None
        self._steps = 0
        self._resolved: dict[str, str | None] = {}  # stated path -> repo path
        #: stated contexts, for the unified format's ``no_context_extracted`` rule
        self._stated_final: Step | None = None
        self._provisional_cache: tuple[int, dict | None] | None = None
        self._final_editloc: tuple[str, dict | None] | None = None
        #: bumped by every event and landed patch: a record built at one version is
        #: the record until the version moves (the watcher rebuilds nothing unchanged)
        self.version = 0
        #: observers called with (session, outcome) after every tool call (inspect, live)
        self.listeners: list[Callable[[RunSession, Any, ToolCall], None]] = []

    @property
    def builder(self) -> StepBuilder | None:
        """What reads the tool calls; None once released. Made at its first use: unified
        predictions state their steps and never need the shell's reading (a third of a
        short replay's imports)."""
        if self._builder is None and not self._released:
            from streameval.reading.steps import StepBuilder

            texts, tools = self._reading
            self._builder = StepBuilder(self.view, texts=texts, tools=tools)
        return self._builder

    # ------------------------------------------------------------------ events
    def handle(self, event: TraceEvent) -> None:
        if self._released:
            # released (``release_reading``): its record is written, and a trace that
            # grows again is read anew; nothing may change a record already out
            log.warning("run %s: event after its record was written; ignored",
                        self.identity.run_id)
            return
        self.version += 1
        if isinstance(event, ToolCall):
            self._on_call(event)
        elif isinstance(event, Usage):
            self._tokens.add(event)
            self._touch(event.timestamp)
        elif isinstance(event, StatedContext):
            self._on_stated(event)
        elif isinstance(event, RunInfo):
            self._on_info(event)
        elif isinstance(event, RunEnd):
            self.ended = event.ends
            self.end_reason = event.reason
            if event.patch and event.patch.strip():
                self.trace_patch = event.patch
            self._touch(event.timestamp)
        elif isinstance(event, BadLine):
            self.extras.bad_lines[str(event.reason)] += 1
            self.extras.first_bad.setdefault(str(event.reason), event.message)

    def _touch(self, ts: float | None) -> None:
        if ts is None:
            return
        ex = self.extras
        if ex.started_at is None or ts < ex.started_at:
            ex.started_at = ts
        if ex.last_event_at is None or ts > ex.last_event_at:
            ex.last_event_at = ts

    def _on_info(self, info: RunInfo) -> None:
        ti = self.trace_info
        if info.cwd:
            # the agent's workspace root: exact paths under it beat shorter suffix
            # matches, and `..` escapes out of it are recognised
            self.builder.add_root(info.cwd)
        for name in ("session_id", "agent", "model", "cwd", "instance_id"):
            value = getattr(info, name)
            if value and not getattr(ti, name):
                setattr(ti, name, value)
        self._touch(info.timestamp)

    def _on_call(self, call: ToolCall) -> None:
        ex = self.extras
        self._touch(call.started_at)
        self._touch(call.ended_at)
        if call.sidechain and not self.include_sidechain:
            # sub-agent calls are kept apart: counted, never steps of this run
            ex.sidechain_calls += 1
            return
        outcome = self.builder.consume(call)
        self.last_call = call
        ex.tool_calls += 1
        self.signals.on_call(call)
        ex.categories[outcome.category] += 1
        ex.edits += len(outcome.edits) + len(
            [p for p in outcome.found_edits if p not in outcome.edits])
        for r in outcome.reads:
            if not r.listing:
                ex.named_paths += 1
                ex.outside_paths += r.repo_path is None and not r.directory
            ex.reads_checked += r.checked
            ex.reads_mismatching += r.mismatch
            if r.repo_path is not None and not r.listing:
                ex.reads_by_tool[call.tool] += 1
            ex.lines_aligned += r.aligned
            ex.lines_agent_written += r.agent
            ex.lines_unaligned += r.unaligned
        for reason, _msg in outcome.problems:
            ex.problems[str(getattr(reason, "value", reason))] += 1
        for path in outcome.context_files:
            ex.context_file_reads[path] += 1
        # A format that states the step itself (ContextBench mini-swe-agent
        # <EXPLORE_CONTEXT>) already added it as a StatedContext: never count it twice.
        stated = bool(call.structured and call.structured.get("stated_context"))
        if outcome.step is not None and not stated:
            self._add_step(outcome.step, call.ended_at or call.started_at)
        for listener in self.listeners:
            listener(self, outcome, call)

    def _on_stated(self, ev: StatedContext) -> None:
        # stated contexts carry trace paths: resolved (docs/metrics.md §2)
        step = ev.step if self.view is None else resolve_step(self.view, ev.step, self._resolved)
        if ev.final:
            self._stated_final = step
            if self.state is not None:
                self.state.set_final_context(step)
        else:
            self._add_step(step, ev.step.timestamp)

    def _add_step(self, step: Step, ts: float | None) -> None:
        if self.state is not None:
            self.state.add_step(step)
        self._steps += 1
        n = self._steps
        ex = self.extras
        seconds = None if ts is None else self._since_start(ts)   # (stated steps: None)
        ranking = self.ranking
        if not ranking.shown_all(step.files):   # (most steps show no new file)
            had_gold = ranking.first_gold is not None
            ranking.add(step.files, n, seconds, self._tokens.so_far())
            if not had_gold and ranking.first_gold is not None:
                ex.first_gold_file_step = n
                ex.first_gold_file_seconds = seconds
        if ex.first_gold_line_step is None and self._touches_gold_lines(step):
            ex.first_gold_line_step = n
            ex.first_gold_line_seconds = seconds
        self.signals.on_step(step)
        if is_checkpoint(n):   # what was known at step n (docs/outcomes.md §3)
            self.signals.keep(self.signal_values(), None if self.state is None else gold_row(
                self.state.snapshot(), ex.first_gold_file_step, ex.first_gold_line_step))

    def _touches_gold_lines(self, step: Step) -> bool:
        for path, ranges in step.spans.items():
            gold = self._gold_lines.get(path)
            if gold and any(gold.overlap(min(a, b), max(a, b)) for a, b in ranges):
                return True
        return False

    def _since_start(self, ts: float | None) -> float | None:
        start = self.extras.started_at
        if ts is None or start is None:
            return None
        return max(0.0, ts - start)

    def end_missing(self, event: str) -> None:
        """The trace ended without ``event``, which its shape always ends with (§5b)."""
        self.version += self.missing_end != event
        self.missing_end = event

    # ------------------------------------------------------------------ patch
    def set_patch(self, patch: str | None, source: str) -> bool:
        """Land the model patch (beside the trace, predictions file, ...).

        Returns True when it changed what EditLoc will be computed from.
        """
        if not patch or not patch.strip() or patch == self.patch:
            return False
        self.patch, self.patch_source = patch, source
        self.version += 1
        return True

    @property
    def final_patch(self) -> str | None:
        """The patch EditLoc is final on: a landed one, else one the trace carried."""
        return self.patch or self.trace_patch

    def final_editloc(self) -> dict | None:
        """EditLoc on the final patch (None without one); cached per patch, since a
        scrape asks for it on every finished run every time."""
        patch = self.final_patch
        if patch is None or self.gold is None:
            return None
        if self._final_editloc is None or self._final_editloc[0] is not patch:
            self._final_editloc = (patch, editloc(patch, self.gold))
        return self._final_editloc[1]

    def provisional_editloc(self) -> dict | None:
        """EditLoc of the edits seen so far (before the patch lands); cached per edit count."""
        if self.gold is None:
            return None
        key = self.extras.edits
        if self._provisional_cache is not None and self._provisional_cache[0] == key:
            return self._provisional_cache[1]
        if self._released:   # released after its record: the kept value stands
            return self._provisional_cache[1] if self._provisional_cache else None
        value = editloc(self.builder.provisional_patch(), self.gold) if key else None
        self._provisional_cache = (key, value)
        return value

    def release_reading(self) -> None:
        """Drop what only reading more of the trace needs (the edit map with its file
        copies, path caches): a finished run whose record is written keeps only its
        numbers while it stays exported. Its provisional EditLoc is kept first; a
        trace that grows again is read anew from its first byte, never into this.

        What is kept is compacted: the state's sets, the gold lines, the ranking's
        files and the listeners go, counters become plain dicts. A watcher keeps up to
        ``--max-runs`` such runs, and a full garbage collection walks every object they
        hold (``InstanceState.compact``)."""
        if self._released:
            return
        self.provisional_editloc()
        self.signals.release()
        self._builder = None
        self._released = True
        self.last_call = None
        self._resolved = {}
        self._reading = None
        self._gold_lines = {}
        self.listeners.clear()   # they hear calls, and no call comes any more
        self.ranking.compact()
        ex = self.extras
        for name in ("categories", "context_file_reads", "bad_lines", "problems", "reads_by_tool"):
            setattr(ex, name, dict(getattr(ex, name)))   # dicts of numbers: not walked
        if self.state is not None:
            self.state.compact()

    @property
    def released(self) -> bool:
        """``release_reading`` was called: the run's numbers are final."""
        return self._released

    # ------------------------------------------------------------------ views
    @property
    def num_steps(self) -> int:
        return self._steps

    def usage_so_far(self) -> UsageSoFar:
        """The usage the trace has reported so far, per-message sums and run totals apart
        (what a backtest needs to tell what the steps after a stop spent)."""
        return self._tokens.so_far_by_kind()

    def signal_values(self) -> SignalValues:
        """The run's gold-free signals now (``scoring.signals``)."""
        tokens, cost = self._tokens.so_far(), self._tokens.totals()[1]
        reread = self.state.redundancy("line") if self.state is not None else None
        return self.signals.values(self.extras, tokens, cost, reread)

    def snapshot(self) -> RunSnapshot:
        """The run now, as one value (``scoring.snapshot``): what every reader reads."""
        ex = self.extras
        tokens, cost = self._tokens.totals()
        agent, model = self.agent_model()
        patch = self.final_patch
        editloc = self.final_editloc() if patch is not None else self.provisional_editloc()
        return RunSnapshot(
            identity=self.identity, agent=agent, model=model, fmt=self.fmt,
            error=self.error if self.error is not None or self.state is not None
            or self.gold_missing is not None else "not evaluated",
            num_steps=self._steps, tool_calls=ex.tool_calls, sidechain_calls=ex.sidechain_calls,
            categories=dict(ex.categories), context_file_reads=dict(ex.context_file_reads),
            bad_lines=dict(ex.bad_lines), problems=self._problems(), edits=ex.edits,
            shown_lines=ex.shown_lines(), reads_by_tool=dict(ex.reads_by_tool),
            tokens=tokens, cost_usd=cost, tokens_source=self.tokens_source(tokens),
            session_id=self.trace_info.session_id,
            first_gold=FirstGoldRead(ex.first_gold_file_step, ex.first_gold_line_step,
                                     ex.first_gold_file_seconds, ex.first_gold_line_seconds),
            started_at=ex.started_at, last_event_at=ex.last_event_at,
            ended=self.ended, end_reason=self.end_reason,
            scores=self.state.snapshot() if self.state is not None else None,
            editloc=editloc, editloc_final=patch is not None,
            patch_source=self.patch_source or ("trace" if self.trace_patch else None),
            grammars=self.symbols_grammars, has_repo=self.view is not None,
            last_call=self.last_call, version=self.version,
            localisation=self.ranking.numbers() if self.state is not None else None,
            signals=self.signal_values(), gold_missing=self.gold_missing)

    def facts(self) -> RunFacts:
        """What the run-level rules read (``scoring.verdict``)."""
        ex, state = self.extras, self.state
        return RunFacts(ex.tool_calls, ex.sidechain_calls, ex.bad_lines, ex.first_bad,
                        ex.named_paths, ex.outside_paths, state and state.final_context_empty,
                        self.gold_missing, None if self.ended else self.missing_end,
                        ex.reads_checked, ex.reads_mismatching)

    def _problems(self) -> dict[str, int]:
        """Per-call problems, and the run-level ones (docs/metrics.md §5b) beside them."""
        out = dict(self.extras.problems)
        if not self.states_context:
            out.update(verdict.problems(self.facts()))
        return out

    def unscorable(self) -> str | None:
        """``reason: message`` when the run's record is an error record (``verdict.error``)."""
        facts = None if self.states_context else self.facts()
        scored = self.state is not None or self.gold_missing is not None
        return verdict.error(facts, self.identity.trace, self.error, scored)

    def record(self) -> Record:
        """The docs/metrics.md §5 record plus run identity and live extras."""
        ident = self.identity
        error = self.unscorable()
        if error is not None:
            rec = error_record(ident, error)
            rec.session_id = self.trace_info.session_id
            return rec
        if self.states_context:
            return self._unified_record()
        snap = self.snapshot()
        rec = self._echo_ids(self.state.record(self.final_patch) if self.state is not None
                             else {"instance_id": ident.instance_id, "num_steps": snap.num_steps,
                                   "gold_missing": self.gold_missing, "final": None,
                                   "trajectory": None})
        first = snap.first_gold
        rec.update({
            "run_id": ident.run_id,
            "trace": ident.trace,
            **({"fidelity": ident.fidelity} if ident.fidelity else {}),
            "agent": snap.agent,
            "model": snap.model,
            "format": snap.fmt,
            "grammars": snap.grammars,
            "tool_calls": snap.tool_calls,
            "sidechain_calls": snap.sidechain_calls,
            "categories": dict(sorted(snap.categories.items())),
            "context_file_reads": dict(sorted(snap.context_file_reads.items())),
            "first_gold_file_step": first.file_step,
            "first_gold_line_step": first.line_step,
            "first_gold_file_seconds": first.file_seconds,
            "first_gold_line_seconds": first.line_seconds,
            "tokens": token_counts(snap.tokens),
            "cost_usd": snap.cost_usd,
            # a pushed run's only (docs/ingest.md): file traces' records keep their keys
            **({"tokens_source": snap.tokens_source} if snap.tokens_source else {}),
            "started_at": snap.started_at,
            "ended_at": snap.last_event_at,
            "end_reason": snap.end_reason,
            "patch_source": snap.patch_source,
            "bad_lines": dict(sorted(snap.bad_lines.items())),
            "problems": dict(sorted(snap.problems.items())),
            "edits": snap.edits,
            "shown_lines": dict(snap.shown_lines),
            "reads_by_tool": dict(sorted(snap.reads_by_tool.items())),
            "signals": self.signals.record(snap.signals),
            **verdict.figures(self.facts()),   # a flag's own figures (§5b)
        })
        rec.update(self._tail())
        rec.session_id = snap.session_id
        return rec

    def tokens_source(self, tokens: TokenUsage) -> str | None:
        """Where a pushed run's tokens came from: the push source that said (Claude
        Code's ``claude_code.api_request``, Codex's ``codex.sse_event``, the hook's
        ``transcript``), else ``trace`` for pushed trace lines that carry usage; None
        for a trace file (its record has no such key) and for a run with no tokens."""
        said = self._tokens.source()
        if said:
            return said
        if self.identity.fidelity is not None and tokens.total:
            return "trace"
        return None

    def _tail(self) -> dict[str, Any]:
        """The fields every scored record ends with (docs/metrics.md §5): localisation
        (§7b), the repository (compare clusters by it; without gold, the one its gold row
        or its instance id names), which gold the numbers were measured against (§1b),
        the run's experiment and labels, and whether it solved its task."""
        ident, gold = self.identity, self.gold
        return {
            "localisation": self.ranking.numbers() if gold is not None else None,
            "repo": self.repo,
            "gold_source": gold.source_record() if gold is not None else None,
            "experiment": ident.experiment,
            "labels": dict(ident.run_labels),
            "resolved": ident.resolved,
        }

    @property
    def repo(self) -> str | None:
        """The run's repository (compare and the outcome analysis cluster by it): its gold
        row's; without gold, the one a gold row named when its clone is missing, else the
        one its instance id names."""
        gold = self.gold
        return gold.repo if gold is not None else self._repo or repo_named(self.identity.instance_id)

    def agent_model(self) -> tuple[str, str]:
        """meta.json's agent and model, else what the trace says (as labels and records
        show them; ``unknown`` when neither says)."""
        ident, info = self.identity, self.trace_info
        agent = ident.agent if ident.agent != "unknown" else (info.agent or "unknown")
        model = ident.model if ident.model != "unknown" else (info.model or "unknown")
        return agent, model

    @property
    def symbols_grammars(self) -> str | None:
        """Which grammar set parsed this run's symbols (docs/metrics.md §3)."""
        return getattr(self.state.symbols, "grammars", None) if self.state else None

    def _echo_ids(self, rec: dict) -> Record:
        """docs/metrics.md §5: ``instance_id`` is the id the input gave; the gold row's own
        id follows as ``gold_instance_id`` when it is another one (an original id)."""
        given = self.identity.instance_id
        gold_id = rec.get("instance_id")
        out = Record(instance_id=given)
        if gold_id != given:
            out["gold_instance_id"] = gold_id
        out.update((k, v) for k, v in rec.items() if k != "instance_id")
        return out

    def _unified_record(self) -> dict:
        """A unified prediction's record: the evaluator's shape, and its answer for a
        final context that resolves to nothing (docs/metrics.md §4b: ``no_context_extracted``
        when no file and no range is left after path resolution; names alone do not count)."""
        final = self._stated_final
        if final is None or not (final.files or any(final.spans.values())):
            return Record.error(self.identity.instance_id, Reason.NO_CONTEXT_EXTRACTED)
        rec = self._echo_ids(self.state.record(self.final_patch))
        rec["grammars"] = self.symbols_grammars
        rec.update(self._tail())
        return rec


def _gold_context_sets(gold) -> tuple[frozenset[str], dict[str, IntervalSet]]:
    """The files and lines of the whole gold context (``init_ctx`` and ``add_ctx``): a
    step that shows any of them is the first gold read (docs/metrics.md §7). Not the
    line granularity's gold, which is ``init_ctx`` only (``GoldInstance.line_gold``)."""
    if gold is None:
        return frozenset(), {}
    files = frozenset(s.file for s in gold.gold_context)
    lines: dict[str, IntervalSet] = {}
    for s in gold.gold_context:
        a, b = sorted((s.start_line, s.end_line))
        if b > 0:
            lines.setdefault(s.file, IntervalSet()).add(max(1, a), b)
    return files, lines


__all__ = ["RunExtras", "RunSession", "GRANULARITIES"]
