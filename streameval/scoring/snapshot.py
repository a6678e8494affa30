"""What a run is at one moment, as one value: the seam every reader of a run reads.

The exporter, the abort engine, the live table, ``inspect``, the page and the record all
read a ``RunSnapshot`` and nothing else of the session, so none of them depends on how
the session keeps its numbers, and each sees the same numbers. A snapshot is immutable
and cheap: O(1) in the length of the run (the per-step curve stays in the record).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streameval.model import RunIdentity, TokenUsage, ToolCall
from streameval.scoring.signals import SignalValues
from streameval.scoring.state import Snapshot

#: the token kinds a run's usage is counted in, in the order records and labels use
TOKEN_KINDS: tuple[str, ...] = ("input", "output", "cache_read", "cache_creation")


def token_counts(tokens: TokenUsage) -> dict[str, int]:
    """``{kind: count}`` in ``TOKEN_KINDS`` order (records, /metrics, abort budgets)."""
    return {k: getattr(tokens, f"{k}_tokens") for k in TOKEN_KINDS}


@dataclass(frozen=True, slots=True)
class UsageSoFar:
    """What a run's trace had reported of its usage at one moment, kept apart by kind:
    the sum of per-message increments, and the latest run total (a cumulative field is
    a total, never summed). None: not reported (yet). ``live.abort.savings`` reads it
    after every tool call to tell what the steps after a stop spent."""

    incremental_tokens: int | None = None
    incremental_cost: float | None = None
    cumulative_tokens: int | None = None
    cumulative_cost: float | None = None


@dataclass(frozen=True, slots=True)
class FirstGoldRead:
    """When gold was first shown: the step (1-based) and seconds since the run began."""

    file_step: int | None = None
    line_step: int | None = None
    file_seconds: float | None = None
    line_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class RunSnapshot:
    """One run's identity, labels, counts, usage and scores at one moment."""

    #: who the run is (meta.json, the trace's path, pid for signals)
    identity: RunIdentity
    #: meta.json's agent and model, else what the trace says; ``unknown`` when neither
    agent: str
    model: str
    fmt: str
    #: the run cannot be scored: the reason (``no_calls_read: ...``); scores are None
    error: str | None
    num_steps: int
    tool_calls: int
    sidechain_calls: int
    categories: Mapping[str, int]
    context_file_reads: Mapping[str, int]
    bad_lines: Mapping[str, int]
    problems: Mapping[str, int]
    edits: int
    #: shown lines by how they were credited: aligned, agent_written, unaligned
    shown_lines: Mapping[str, int]
    reads_by_tool: Mapping[str, int]
    tokens: TokenUsage
    cost_usd: float | None
    #: a pushed run's: where its tokens came from (``RunSession.tokens_source``)
    tokens_source: str | None
    #: the session id the trace states (Claude ``sessionId``, Codex ``session_meta``):
    #: ``gen_ai.conversation.id`` when scores leave as OpenTelemetry
    session_id: str | None
    first_gold: FirstGoldRead
    started_at: float | None
    last_event_at: float | None
    #: the trace says the run is over, and why (when it says)
    ended: bool
    end_reason: str | None
    #: the four granularities' numbers; None when the run cannot be scored
    scores: Snapshot | None
    #: EditLoc on the landed patch (``editloc_final``) or on the edits seen so far
    editloc: Mapping[str, float] | None
    editloc_final: bool
    patch_source: str | None
    grammars: str | None
    #: the run's paths are checked against a repository at its base commit
    has_repo: bool
    #: the latest tool call scored (the live table's and the page's last column)
    last_call: ToolCall | None
    #: bumped by every event: two snapshots of one run at one version are equal
    version: int
    #: the record's ``localisation`` block (docs/metrics.md §7b); None when not scored
    localisation: Mapping[str, object] | None = None
    #: the gold-free signals now (``scoring.signals``, docs/outcomes.md §2)
    signals: SignalValues | None = None
    #: why the run is measured against no gold (``no_gold: ...``); its scores are None
    #: and ``error`` is None: it is a run, not an error (docs/metrics.md §5b)
    gold_missing: str | None = None

    @property
    def run_id(self) -> str:
        return self.identity.run_id

    @property
    def instance_id(self) -> str:
        return self.identity.instance_id

    @property
    def elapsed(self) -> float | None:
        """Trace time from the first event to the last (None without timestamps)."""
        if self.started_at is None or self.last_event_at is None:
            return None
        return max(0.0, self.last_event_at - self.started_at)
