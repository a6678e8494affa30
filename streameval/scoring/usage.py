"""What a run spent, as its trace reports it: per-message usage summed, or a run total.

A format reports usage per message (Claude's ``usage``), as running totals (Codex's
``token_count``, mini-swe-agent's sums over its responses), or once for the whole run
(SWE-agent's ``.traj``). ``TokenSums`` keeps the two kinds apart, so a run total is never
added up as if it were per message, and so what a run had spent at a given step is known
only where the trace said it then (docs/metrics.md §7).
"""

from __future__ import annotations

from streameval.model import TokenUsage, Usage
from streameval.scoring.snapshot import UsageSoFar

__all__ = ["TokenSums"]


class TokenSums:
    """Sums per-message usage, but lets a run total (``cumulative``) take over."""

    def __init__(self) -> None:
        self.incremental = TokenUsage()
        self.cumulative: TokenUsage | None = None
        self.cost_incremental = 0.0
        self.cost_cumulative: float | None = None
        self.any_cost = False
        #: the pushed sources the numbers came from (``Usage.source``), by kind
        self.incremental_sources: set[str] = set()
        self.cumulative_source: str | None = None
        self.any_usage = False
        self.any_incremental = False
        self.any_incremental_cost = False

    def so_far(self) -> int | None:
        """All tokens reported so far (the four kinds); None before the trace reported
        any usage: a format that states its usage only at the end (SWE-agent ``.traj``)
        does not know what the run had spent at a given step, and 0 would be a wrong
        number."""
        return self.totals()[0].total if self.any_usage else None

    def add(self, usage: Usage) -> None:
        self.any_usage = True
        t = usage.tokens
        if usage.cumulative:
            self.cumulative_source = usage.source
            self.cumulative = TokenUsage(t.input_tokens, t.output_tokens,
                                         t.cache_read_tokens, t.cache_creation_tokens)
            if usage.cost_usd is not None:
                self.cost_cumulative = float(usage.cost_usd)
                self.any_cost = True
            return
        if usage.source is not None:
            self.incremental_sources.add(usage.source)
        self.any_incremental = True
        inc = self.incremental
        inc.input_tokens += t.input_tokens
        inc.output_tokens += t.output_tokens
        inc.cache_read_tokens += t.cache_read_tokens
        inc.cache_creation_tokens += t.cache_creation_tokens
        if usage.cost_usd is not None:
            self.cost_incremental += float(usage.cost_usd)
            self.any_cost = True
            self.any_incremental_cost = True

    def so_far_by_kind(self) -> UsageSoFar:
        """Both running figures as reported so far (``UsageSoFar``)."""
        return UsageSoFar(
            self.incremental.total if self.any_incremental else None,
            self.cost_incremental if self.any_incremental_cost else None,
            self.cumulative.total if self.cumulative is not None else None,
            self.cost_cumulative)

    def totals(self) -> tuple[TokenUsage, float | None]:
        tokens = self.cumulative if self.cumulative is not None else self.incremental
        if not self.any_cost:
            return tokens, None
        cost = self.cost_cumulative if self.cost_cumulative is not None else self.cost_incremental
        return tokens, cost

    def source(self) -> str | None:
        """Where the totals came from when a push source said (``Usage.source``): the
        run total's source when one took over, else the sources summed, sorted."""
        if self.cumulative is not None:
            return self.cumulative_source
        return ",".join(sorted(self.incremental_sources)) or None
