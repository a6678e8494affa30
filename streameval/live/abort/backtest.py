"""What would these abort policies have done to past runs (``streameval abort-backtest``)?

Each recorded trace is replayed through the same session code as ``watch`` and
``replay``; the policies are checked after every tool call (a session listener, as
live) and once more when the trace ends (live does it after each batch). The engine
runs dry: nothing is written, posted or signalled.

Per policy the report gives the runs it would have stopped, the step at which
(median/min/max), what stopping would have saved (final minus at-stop steps, tokens
and cost), and the *wrongful* stops: stopped runs that went on to reach high final
coverage (``--high-coverage`` at ``--granularity``) or a correct edit location
(final EditLoc recall > 0). A policy is worth turning on when it saves a lot and
stops few good runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from streameval.errors import StreamevalError
from streameval.live.table import LiveRun, run_key
from streameval.live.watch import is_trace
from streameval.runs.evaluate import land_file_patch, make_session, run_identity
from streameval.runs.reader import TraceReader
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

    def factory(trace_instance: str | None, session_id: str | None):
        ident = run_identity(identity, trace_instance, len(runs), res, trace=path,
                             session_id=session_id)
        session = make_session(res, ident, name, include_sidechain=include_sidechain)
        key = run_key(path, len(runs))
        run = LiveRun(key=key, session=session, first_seen=0.0)
        runs.append(run)
        stops[key] = {}

        def after_call(s, _outcome, _call) -> None:  # as live: after every tool call
            for d in engine.check(run, path, None):
                stops[run.key][d.policy] = d

        session.listeners.append(after_call)
        return session

    reader = TraceReader(adapter, factory)
    for line, lineno in iter_lines(path):
        reader.feed_line(line, lineno)
    land_file_patch(reader.close(), patch_beside(path))
    out = []
    for run in runs:
        for d in engine.check(run, path, None):  # what the end of the trace brought (usage...)
            stops[run.key][d.policy] = d
        out.append(_outcome(run, path, stops[run.key], granularity))
    engine.forget(set())  # runs of different files are independent: keep memory flat
    return out


def _outcome(run, path: Path, stops: dict, granularity: str) -> RunOutcome:
    snap = run.session.snapshot()
    error = snap.error
    coverage = None if error else snap.scores.granularities[granularity].coverage
    editloc = snap.editloc.get("recall") if snap.editloc and snap.editloc_final else None
    return RunOutcome(snap.run_id, snap.instance_id, str(path), snap.num_steps,
                      snap.tokens.total, snap.cost_usd, coverage, editloc, error=error,
                      stops=stops)


# ---------------------------------------------------------------------- summarizing


def _cost_at_stop(o: RunOutcome, d) -> tuple[float, float, bool] | None:
    """(final cost, cost at the stop, estimated?) for a stopped run whose cost is known.

    Many traces state the cost only at the end (Claude's ``total_cost_usd``): the cost
    at the stop is then estimated in proportion to the tokens used by then.
    """
    if o.cost_usd is None:
        return None
    if d.cost_usd is not None:
        return o.cost_usd, d.cost_usd, False
    share = min(1.0, d.tokens / o.tokens) if o.tokens else 1.0
    return o.cost_usd, o.cost_usd * share, True


def summarize(config, outcomes: list[RunOutcome], high: float = 0.8,
              granularity: str = "line") -> dict:
    """The numbers of the report, per policy (JSON-ready)."""
    policies = []
    for p in config.policies:
        stopped = [(o, o.stops[p.name]) for o in outcomes if p.name in o.stops]
        steps = [d.step for _o, d in stopped]
        costs = [c for c in (_cost_at_stop(o, d) for o, d in stopped) if c is not None]
        wrongful = [o for o, _d in stopped if o.error is None and o.good(high)]
        policies.append({
            "policy": p.name, "kind": p.kind, "action": p.action,
            "runs": len(outcomes), "stopped": len(stopped),
            "stop_step": ({"median": statistics.median(steps), "min": min(steps), "max": max(steps)}
                          if steps else None),
            "saved": {
                "steps": sum(max(0, o.steps - d.step) for o, d in stopped),
                "tokens": sum(max(0, o.tokens - d.tokens) for o, d in stopped),
                "cost_usd": sum(max(0.0, final - at) for final, at, _est in costs) if costs else None,
                "cost_estimated": any(est for _f, _a, est in costs),
            },
            "wrongful": len(wrongful),
            "wrongful_runs": [o.run_id for o in wrongful],
            "stopped_runs": [{"run_id": o.run_id, "instance_id": o.instance_id, "step": d.step,
                              "final_steps": o.steps, "reason": d.reason} for o, d in stopped],
        })
    return {
        "high_coverage": high, "granularity": granularity,
        "runs": [{"run_id": o.run_id, "instance_id": o.instance_id, "trace": o.trace,
                  "steps": o.steps, "tokens": o.tokens, "cost_usd": o.cost_usd,
                  "coverage": o.coverage, "editloc_recall": o.editloc_recall,
                  "error": o.error, "good": o.error is None and o.good(high),
                  "stopped_by": sorted(o.stops)} for o in outcomes],
        "policies": policies,
    }


def format_table(summary: dict) -> str:
    runs = summary["runs"]
    good = sum(1 for r in runs if r["good"])
    errors = sum(1 for r in runs if r["error"])
    lines = [f"runs: {len(runs)}  good (coverage@{summary['granularity']} >= "
             f"{summary['high_coverage']:g} or EditLoc recall > 0): {good}  not scored: {errors}",
             "",
             f"{'policy':<20} {'kind':<11} {'stopped':>7} {'step med/min/max':>17} "
             f"{'saved steps':>11} {'saved tokens':>12} {'saved $':>8} {'wrongful':>8}"]
    for p in summary["policies"]:
        st = p["stop_step"]
        step = f"{st['median']:g}/{st['min']}/{st['max']}" if st else "-"
        cost = p["saved"]["cost_usd"]
        lines.append(
            f"{p['policy']:<20} {p['kind']:<11} {p['stopped']:>3}/{p['runs']:<3} {step:>17} "
            f"{p['saved']['steps']:>11} {p['saved']['tokens']:>12} "
            f"{'-' if cost is None else f'{cost:.2f}':>7}{'*' if p['saved']['cost_estimated'] else ' '}"
            f" {p['wrongful']:>8}")
    if any(p["saved"]["cost_estimated"] for p in summary["policies"]):
        lines.append("* cost at the stop estimated from the share of tokens used by then")
    wrong = [(p["policy"], p["wrongful_runs"]) for p in summary["policies"] if p["wrongful_runs"]]
    if wrong:
        lines.append("")
        lines.extend(f"wrongful stops by {name}: {', '.join(ids)}" for name, ids in wrong)
    return "\n".join(lines)


__all__ = ["RunOutcome", "backtest_trace", "find_traces", "format_table", "summarize"]
