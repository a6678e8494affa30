"""A policy judged by outcomes: what stopping runs would have lost and saved
(docs/outcomes.md §7 defines every figure).

What a user loses by stopping a run is a solved task; what they save is the spend of
runs that were going to fail. So, over the runs whose outcome is known (``--outcomes``,
meta.json), a policy's figures are:

- **lost**: resolved runs it stops (their task would not have been solved), and their
  share of the resolved runs;
- **caught**: unresolved runs it stops, and their share of the unresolved runs;
- **saved**, on each: what the runs it stops spent after the stop (``savings``): steps,
  tool calls, tokens and cost. The spend of a resolved run after its stop is counted
  apart: it is not a saving a user keeps, since the task then goes unsolved;
- **the solve rate** without the policy (resolved / runs) and with it (the runs it
  stops count as unresolved: (resolved - lost) / runs).

A policy that fired after a run's last tool call (``backtest.Stop.after_last_call``)
changed nothing: that run is counted apart (``after_last_call``), neither lost nor
caught, and saved nothing. Runs whose outcome is not known are in none of these: the
report says how many.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Judged", "Spend", "judge"]


@dataclass(slots=True)
class Spend:
    """Steps, tool calls, tokens and cost, summed over ``runs``. Tokens and cost are
    summed over the runs whose trace states them (``tokens_runs``, ``cost_runs``: how
    many; None when runs were summed and none states them); ``*_estimated``: some of
    them were estimated (``savings``)."""

    runs: int = 0
    steps: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    tokens_runs: int = 0
    cost_runs: int = 0
    tokens_estimated: bool = False
    cost_estimated: bool = False

    def add(self, steps: int, calls: int, tokens: int | None, cost: float | None,
            tokens_estimated: bool = False, cost_estimated: bool = False) -> None:
        self.runs += 1
        self.steps += steps
        self.tool_calls += calls
        if tokens is not None:
            self.tokens += tokens
            self.tokens_runs += 1
            self.tokens_estimated |= tokens_estimated
        if cost is not None:
            self.cost_usd += cost
            self.cost_runs += 1
            self.cost_estimated |= cost_estimated

    def to_json(self) -> dict:
        return {"runs": self.runs, "steps": self.steps, "tool_calls": self.tool_calls,
                "tokens": self.tokens if self.tokens_runs or not self.runs else None,
                "tokens_estimated": self.tokens_estimated,
                "cost_usd": self.cost_usd if self.cost_runs or not self.runs else None,
                "cost_estimated": self.cost_estimated}


@dataclass(slots=True)
class Judged:
    """One policy over the runs with a known outcome (the module's figures)."""

    runs: int = 0
    resolved: int = 0
    lost: int = 0
    caught: int = 0
    #: runs the policy fired on only after their last tool call: it changed nothing
    after_last_call: int = 0
    #: what every run judged spent in all, and what the stops saved on each kind of run
    spend: Spend = field(default_factory=Spend)
    saved_failed: Spend = field(default_factory=Spend)
    saved_resolved: Spend = field(default_factory=Spend)
    lost_runs: list[str] = field(default_factory=list)
    after_last_call_runs: list[str] = field(default_factory=list)

    @property
    def unresolved(self) -> int:
        return self.runs - self.resolved

    @property
    def solve_rate(self) -> float | None:
        return self.resolved / self.runs if self.runs else None

    @property
    def solve_rate_with(self) -> float | None:
        return (self.resolved - self.lost) / self.runs if self.runs else None

    @property
    def lost_share(self) -> float | None:
        return self.lost / self.resolved if self.resolved else None

    @property
    def caught_share(self) -> float | None:
        return self.caught / self.unresolved if self.unresolved else None

    def to_json(self) -> dict:
        return {"runs": self.runs, "resolved": self.resolved, "unresolved": self.unresolved,
                "lost": self.lost, "lost_share": self.lost_share, "caught": self.caught,
                "caught_share": self.caught_share, "lost_runs": self.lost_runs,
                "after_last_call": self.after_last_call,
                "after_last_call_runs": self.after_last_call_runs,
                "solve_rate": self.solve_rate, "solve_rate_with": self.solve_rate_with,
                "spend": self.spend.to_json(), "saved_on_failed": self.saved_failed.to_json(),
                "saved_on_resolved": self.saved_resolved.to_json()}


def judge(runs: Iterable[tuple]) -> Judged:
    """``runs``: (``backtest.RunOutcome``, its ``backtest.Stop`` by the policy or None);
    those whose outcome is not known are passed over."""
    out = Judged()
    for o, st in runs:
        if o.resolved is None:
            continue
        out.runs += 1
        out.resolved += o.resolved
        tokens, cost = o.spent
        out.spend.add(o.steps, o.tool_calls, tokens, cost)
        if st is None:
            continue
        if st.after_last_call:
            out.after_last_call += 1
            out.after_last_call_runs.append(o.run_id)
            continue
        if o.resolved:
            out.lost += 1
            out.lost_runs.append(o.run_id)
        else:
            out.caught += 1
        saved = out.saved_resolved if o.resolved else out.saved_failed
        saved.add(st.saved_steps, st.saved_calls, st.saved.tokens, st.saved.cost_usd,
                  st.saved.tokens_estimated, st.saved.cost_estimated)
    return out
