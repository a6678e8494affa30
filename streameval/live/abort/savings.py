"""What stopping a run would have saved: the usage its steps after the stop spent
(docs/operate.md, "What a backtest's savings mean").

A backtest replays a finished trace and asks where a policy would have stopped it. The
saving is what the run spent *after* that point, and the trace tells it in one of three
ways:

- **Measured.** The trace reported usage as the run went (Claude's per-message usage,
  Codex's running totals, mini-swe-agent's per-response usage): the saving is the run's final figure minus the figure at the
  stop, on one basis (run totals with run totals, sums of per-message increments with
  such sums: a cumulative field is never added up as if it were per step).
- **Cost by token share (estimated).** Tokens were reported as the run went but the cost
  only at the end (Claude's ``total_cost_usd``): the saved cost is the final cost times
  the share of the final tokens spent after the stop.
- **In proportion to tool calls (estimated).** Nothing was reported before the end
  (a SWE-agent ``.traj`` states one total): the saving is the total times the share
  of the run's tool calls made after the stop. Later calls usually cost more (the
  context grows), so this tends to understate the saving.

A budget on tokens or cost fires where the run crossed it. In a whole-document trace
that its agent rewrites after every step and that states only its total (SWE-agent
``.traj``, a mini-swe-agent trajectory whose responses state no usage), the live
watcher sees the usage grow step by step, but the finished document keeps only the
total, so a replay would see the budget crossed only at the very end. There the
crossing is placed at the tool call where a run spending the same at every call would
cross it, and marked estimated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from streameval.scoring.snapshot import UsageSoFar

__all__ = ["Saving", "UsagePoint", "crossing_point", "final_usage", "saving"]


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """A run after one of its tool calls: calls and steps so far, usage as reported."""

    calls: int
    steps: int
    usage: UsageSoFar


@dataclass(frozen=True, slots=True)
class Saving:
    tokens: int | None
    tokens_estimated: bool
    cost_usd: float | None
    cost_estimated: bool


def _tokens_on_one_basis(at: UsageSoFar, end: UsageSoFar) -> tuple[int, int] | None:
    """(tokens at the stop, at the end) on a basis both have: run totals first."""
    if at.cumulative_tokens is not None and end.cumulative_tokens is not None:
        return at.cumulative_tokens, end.cumulative_tokens
    if at.incremental_tokens is not None and end.incremental_tokens is not None:
        return at.incremental_tokens, end.incremental_tokens
    return None


def _cost_on_one_basis(at: UsageSoFar, end: UsageSoFar) -> tuple[float, float] | None:
    if at.cumulative_cost is not None and end.cumulative_cost is not None:
        return at.cumulative_cost, end.cumulative_cost
    if at.incremental_cost is not None and end.incremental_cost is not None:
        return at.incremental_cost, end.incremental_cost
    return None


def final_usage(u: UsageSoFar) -> tuple[int | None, float | None]:
    """The run's final tokens and cost (a run total wins over summed increments)."""
    tokens = u.cumulative_tokens if u.cumulative_tokens is not None else u.incremental_tokens
    cost = u.cumulative_cost if u.cumulative_cost is not None else u.incremental_cost
    return tokens, cost


def saving(stop: UsagePoint, end: UsagePoint) -> Saving:
    """What the steps after ``stop`` spent, up to ``end`` (the module's three ways)."""
    call_share = (end.calls - stop.calls) / end.calls if end.calls else 0.0
    final_tokens, final_cost = final_usage(end.usage)
    measured = _tokens_on_one_basis(stop.usage, end.usage)
    if measured is not None:
        tokens, tokens_est = max(0, measured[1] - measured[0]), False
    elif final_tokens is not None:
        tokens, tokens_est = round(final_tokens * call_share), True
    else:
        tokens, tokens_est = None, False
    cost_measured = _cost_on_one_basis(stop.usage, end.usage)
    if cost_measured is not None:
        cost, cost_est = max(0.0, cost_measured[1] - cost_measured[0]), False
    elif final_cost is None:
        cost, cost_est = None, False
    elif measured is not None and measured[1] > 0:
        cost, cost_est = final_cost * max(0, measured[1] - measured[0]) / measured[1], True
    else:
        cost, cost_est = final_cost * call_share, True
    return Saving(tokens, tokens_est, cost, cost_est)


def crossing_point(timeline: list[UsagePoint], end: UsagePoint, final_value: float,
                   limit: float) -> UsagePoint | None:
    """The tool call where a run that spent ``final_value`` evenly over its calls would
    first reach ``limit``: call ceil(limit / final_value * calls), or None when it never
    does. ``timeline`` holds one point per tool call, in order."""
    if end.calls <= 0 or final_value < limit or final_value <= 0:
        return None
    k = max(1, min(end.calls, math.ceil(limit / final_value * end.calls)))
    return next((p for p in timeline if p.calls == k), end)


def reported_before_end(timeline: list[UsagePoint]) -> bool:
    """Did the trace report any usage at a tool call (not only once, at its end)?"""
    return any(p.usage != UsageSoFar() for p in timeline)
