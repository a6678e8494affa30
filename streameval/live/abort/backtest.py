"""What would these abort policies have done to past runs (``streameval abort-backtest``)?

Each recorded trace is replayed through the same session code as ``watch`` and
``replay``; the policies are checked after every tool call (a session listener, as
live) and once more when the trace ends (live does it after each batch). The engine
runs dry: nothing is written, posted or signalled.

Per policy the report gives the runs it would have stopped, the step at which
(median/min/max), and what stopping would have saved (the steps after the stop, and the
tokens and cost they spent: measured where the trace reported usage as it went,
estimated and marked where it did not, ``savings``). Where runs have outcomes
(``--outcomes``, meta.json) each policy is judged by them (``judged``): resolved runs
stopped (the loss), unresolved runs stopped, what was saved on each, and the solve rate
with and without it. A policy that fires only after a run's last tool call (at the
trace's end: a cost stated only then) stops nothing: such runs are counted apart
(``Stop.after_last_call``). Without outcomes, a *proxy* stands in, and is labelled one: a
stopped run that went on to reach high final coverage (``--high-coverage`` at
``--granularity``) or a correct edit location (final EditLoc recall > 0) is a
*wrongful* stop.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from streameval.errors import StreamevalError
from streameval.live.abort.judged import judge
from streameval.live.abort.savings import (
    Saving,
    UsagePoint,
    crossing_point,
    final_usage,
    reported_before_end,
    saving,
)
from streameval.live.paths import is_trace
from streameval.live.table import LiveRun, run_key
from streameval.runs.evaluate import land_file_patch, make_session, run_identity
from streameval.runs.reader import TraceReader
from streameval.scoring.snapshot import UsageSoFar
from streameval.traces.files import iter_lines, open_adapter
from streameval.traces.identity import identify, patch_beside, walk_files


@dataclass(slots=True)
class RunOutcome:
    """One replayed run: its final numbers and the (dry) decisions taken on it."""

    run_id: str
    instance_id: str
    trace: str
    steps: int
    tokens: int
    cost_usd: float | None
    coverage: float | None       # final coverage at the chosen granularity
    editloc_recall: float | None  # None: no patch
    error: str | None = None
    stops: dict = field(default_factory=dict)  # policy -> abort.Decision
    #: the run after each tool call, and at its end (``savings``)
    timeline: list[UsagePoint] = field(default_factory=list)
    end: UsagePoint | None = None
    #: policy -> the point it stopped the run at
    stop_points: dict[str, UsagePoint] = field(default_factory=dict)
    #: a whole document its agent rewrites after every step (usage known only as a total)
    document: bool = False
    #: whether the run solved its task (``--outcomes``, meta.json); None: not known
    resolved: bool | None = None
    #: the run's repository (``RunSession.repo``): what a split and intervals cluster by
    repo: str | None = None

    @property
    def tool_calls(self) -> int:
        return self.end.calls if self.end is not None else 0

    @property
    def spent(self) -> tuple[int | None, float | None]:
        """The tokens and cost the run spent in all (None: its trace states none)."""
        return final_usage(self.end.usage) if self.end is not None else (None, None)

    def good(self, high: float) -> bool:
        """The run ended well: high coverage, or a patch that edits a gold location."""
        return ((self.coverage is not None and self.coverage >= high)
                or (self.editloc_recall is not None and self.editloc_recall > 0))


# ---------------------------------------------------------------------- replaying


def find_traces(paths: list[Path]) -> list[Path]:
    """Files as given; directories searched for trace files the way ``watch`` does."""

    out: list[Path] = []
    for p in paths:
        if p.is_file():
            out.append(p)
            continue
        out.extend(f for f in walk_files(p) if is_trace(f))
    return out


def backtest_trace(path: Path, res, engine, granularity: str = "line", *,
                   fmt: str | None = None, include_sidechain: bool = False) -> list[RunOutcome]:
    """Replay one trace file through ``engine`` (dry); one outcome per run in the file."""

    path = Path(path)
    identity = identify(path)
    try:
        name, adapter = open_adapter(path, fmt)
    except StreamevalError as exc:
        return [RunOutcome(identity.run_id, identity.instance_id, str(path), 0, 0, None, None,
                           None, error=f"{exc.reason.value}: {exc}")]
    runs: list[LiveRun] = []
    stops: dict[str, dict] = {}  # run key -> policy -> Decision
    timelines: dict[str, list[UsagePoint]] = {}
    stop_points: dict[str, dict[str, UsagePoint]] = {}

    def factory(trace_instance: str | None, session_id: str | None):
        ident = run_identity(identity, trace_instance, len(runs), res, trace=path,
                             session_id=session_id)
        session = make_session(res, ident, name, include_sidechain=include_sidechain)
        key = run_key(path, len(runs))
        run = LiveRun(key=key, session=session, first_seen=0.0)
        runs.append(run)
        stops[key], timelines[key], stop_points[key] = {}, [], {}

        def after_call(s, _outcome, _call) -> None:  # as live: after every tool call
            point = _point(s)
            timelines[run.key].append(point)
            for d in engine.check(run, path, None):
                stops[run.key][d.policy] = d
                stop_points[run.key][d.policy] = point

        session.listeners.append(after_call)
        return session

    reader = TraceReader(adapter, factory)
    for line, lineno in iter_lines(path):
        reader.feed_line(line, lineno)
    land_file_patch(reader.close(), patch_beside(path))
    out = []
    for run in runs:
        end = _point(run.session)
        for d in engine.check(run, path, None):  # what the end of the trace brought (usage...)
            stops[run.key][d.policy] = d
            stop_points[run.key][d.policy] = end
        o = _outcome(run, path, stops[run.key], granularity)
        o.timeline, o.end, o.stop_points = timelines[run.key], end, stop_points[run.key]
        o.document = bool(getattr(adapter, "document", False))
        out.append(o)
    engine.forget(set())  # runs of different files are independent: keep memory flat
    return out


def _point(session) -> UsagePoint:
    return UsagePoint(session.extras.tool_calls, session.num_steps, session.usage_so_far())


def _outcome(run, path: Path, stops: dict, granularity: str) -> RunOutcome:
    snap = run.session.snapshot()
    error = snap.error
    scores = snap.scores
    coverage = None if error or scores is None else scores.granularities[granularity].coverage
    editloc = snap.editloc.get("recall") if snap.editloc and snap.editloc_final else None
    return RunOutcome(snap.run_id, snap.instance_id, str(path), snap.num_steps,
                      snap.tokens.total, snap.cost_usd, coverage, editloc, error=error,
                      stops=stops, resolved=snap.identity.resolved, repo=run.session.repo)


@dataclass(frozen=True, slots=True)
class Stop:
    """Where a policy stopped a run (re-placed, ``estimated``, for a budget a document
    trace reports only as a total) and what that saved."""

    step: int
    estimated: bool
    saved_steps: int
    saved: Saving
    saved_calls: int = 0

    @property
    def after_last_call(self) -> bool:
        """The policy fired after the run's last tool call (on that call, or at the
        trace's end, as a cost a Claude trace states only then): the run had nothing
        left to do, so the stop would have changed nothing. It is no stop: neither lost
        nor caught nor saved (docs/outcomes.md §7), and counted apart."""
        return self.saved_calls == 0


def stop_of(o: RunOutcome, policy) -> Stop:
    """The policy's stop of ``o`` and its saving (``savings``)."""
    d = o.stops[policy.name]
    end = o.end or UsagePoint(0, o.steps, UsageSoFar())
    point = o.stop_points.get(policy.name, end)
    estimated = False
    if (policy.kind in ("tokens", "cost") and o.document and point.calls == end.calls
            and not reported_before_end(o.timeline)):
        crossed = crossing_point(o.timeline, end, d.value, policy.limit)
        if crossed is not None:
            point, estimated = crossed, True
    step = point.steps if estimated else d.step
    return Stop(step, estimated, max(0, o.steps - step), saving(point, end),
                max(0, end.calls - point.calls))


# ---------------------------------------------------------------------- summarizing


def summarize(config, outcomes: list[RunOutcome], high: float = 0.8,
              granularity: str = "line") -> dict:
    """The numbers of the report, per policy (JSON-ready). With outcomes (any run's known)
    each policy is judged by them (``judged``); without, by the proxy (``good``)."""
    judged = any(o.resolved is not None for o in outcomes)
    policies = []
    for p in config.policies:
        fired = [(o, stop_of(o, p)) for o in outcomes if p.name in o.stops]
        stopped = [(o, st) for o, st in fired if not st.after_last_call]
        late = [(o, st) for o, st in fired if st.after_last_call]
        steps = [st.step for _o, st in stopped]
        tokens = [st.saved.tokens for _o, st in stopped if st.saved.tokens is not None]
        costs = [st.saved.cost_usd for _o, st in stopped if st.saved.cost_usd is not None]
        row = {
            "policy": p.name, "kind": p.kind, "action": p.action,
            "runs": len(outcomes), "stopped": len(stopped), "after_last_call": len(late),
            "stop_step": ({"median": statistics.median(steps), "min": min(steps), "max": max(steps)}
                          if steps else None),
            "stop_estimated": any(st.estimated for _o, st in stopped),
            "saved": {
                "steps": sum(st.saved_steps for _o, st in stopped),
                "tool_calls": sum(st.saved_calls for _o, st in stopped),
                "tokens": sum(tokens),
                "tokens_estimated": any(st.saved.tokens_estimated for _o, st in stopped),
                "cost_usd": sum(costs) if costs else None,
                "cost_estimated": any(st.saved.cost_estimated for _o, st in stopped),
            },
        }
        if judged:
            by_run = {id(o): st for o, st in fired}
            row["outcomes"] = judge((o, by_run.get(id(o))) for o in outcomes).to_json()
        else:
            wrongful = [o for o, _st in stopped if o.error is None and o.good(high)]
            row["wrongful_proxy"] = len(wrongful)
            row["wrongful_proxy_runs"] = [o.run_id for o in wrongful]
        row["stopped_runs"] = [
            {"run_id": o.run_id, "instance_id": o.instance_id, "step": st.step,
             "step_estimated": st.estimated, "final_steps": o.steps, "resolved": o.resolved,
             "saved_steps": st.saved_steps, "saved_tool_calls": st.saved_calls,
             "saved_tokens": st.saved.tokens, "saved_tokens_estimated": st.saved.tokens_estimated,
             "saved_cost_usd": st.saved.cost_usd, "saved_cost_estimated": st.saved.cost_estimated,
             "reason": o.stops[p.name].reason} for o, st in stopped]
        row["after_last_call_runs"] = [
            {"run_id": o.run_id, "instance_id": o.instance_id, "step": st.step,
             "resolved": o.resolved, "reason": o.stops[p.name].reason} for o, st in late]
        policies.append(row)
    known = [o.resolved for o in outcomes if o.resolved is not None]
    return {
        "high_coverage": high, "granularity": granularity,
        "judged_by": "outcomes" if judged else "proxy",
        "outcomes": {"runs": len(outcomes), "known": len(known), "resolved": sum(known),
                     "solve_rate": sum(known) / len(known)} if judged else None,
        "runs": [{"run_id": o.run_id, "instance_id": o.instance_id, "trace": o.trace,
                  "repo": o.repo, "steps": o.steps, "tool_calls": o.tool_calls,
                  "tokens": o.tokens, "cost_usd": o.cost_usd,
                  "coverage": o.coverage, "editloc_recall": o.editloc_recall,
                  "error": o.error, "resolved": o.resolved,
                  **({} if judged else {"good_proxy": o.error is None and o.good(high)}),
                  "stopped_by": sorted(o.stops)} for o in outcomes],
        "policies": policies,
    }


__all__ = ["RunOutcome", "Stop", "backtest_trace", "find_traces", "stop_of", "summarize"]
