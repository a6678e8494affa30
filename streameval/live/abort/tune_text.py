"""``abort-backtest --tune``'s output: the report as text and JSON, and the tuned policy
file ``watch --abort-config`` reads (the pick active, every other kind's choice there
commented out, each with its figures)."""

from __future__ import annotations

from dataclasses import replace

from streameval.live.abort.policy import format_policy
from streameval.live.abort.tune import Candidate, Figures, TuneResult
from streameval.report.outcome_stats import Interval

__all__ = ["format_tune", "tune_json", "tuned_toml"]


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _iv(iv: Interval | None) -> str:
    if iv is None or iv.estimate is None:
        return "-"
    mark = "!" if iv.reasons else ""
    if iv.low is None:
        return f"{_pct(iv.estimate)} [-]{mark}"
    return f"{_pct(iv.estimate)} [{_pct(iv.low)}, {_pct(iv.high)}]{mark}"


def _split_line(r: TuneResult) -> str:
    s = r.split
    what = "repositories" if s.by == "repository" else "instances"
    return (f"split by {s.by} (--seed {r.seed}): training {len(s.train)} runs of "
            f"{len(s.train_groups)} {what}, held out {len(s.test)} runs of "
            f"{len(s.test_groups)}" + (f" ({', '.join(s.test_groups)})"
                                      if s.by == "repository" else ""))


def _figures(c: Candidate) -> str:
    t = c.test
    return (f"training: saved on failed runs {_pct(c.train.saved_failed)}, lost "
            f"{_pct(c.train.lost)}; held out: saved on failed runs "
            f"{_iv(t.saved_failed_iv if t else None)}, lost {_iv(t.lost_iv if t else None)}")


def format_tune(r: TuneResult, written: str | None = None) -> str:
    lines = [f"tune: {r.known} run(s) with an outcome ({r.runs - r.known} without); "
             + _split_line(r),
             f"spend in {r.spend}. saved: what stopped failed runs spent after the stop, as a "
             "share of what every run spent; lost: the share of resolved runs stopped; "
             "95% intervals, repositories as units (! : not to be trusted, --json says why)",
             f"each kind's thresholds on the training front, measured on the held-out runs; "
             f"* its choice: saves most on the training runs losing at most "
             f"{_pct(r.max_lost)} of them", ""]
    head = (f"  {'policy':<30} {'train saved':>11} {'train lost':>10}  {'held-out saved':<24}"
            f" {'held-out lost':<24} {'saved (all runs)':<24} front")
    for kind, front in r.fronts.items():
        lines.append(f"{kind}:" + ("" if front else " no candidate stops anything"))
        if front:
            lines.append(head)
        for c in front:
            t = c.test
            star = "*" if r.chosen.get(kind) is c else " "
            lines.append(
                f"{star} {c.policy.name:<30} {_pct(c.train.saved_failed):>11} "
                f"{_pct(c.train.lost):>10}  {_iv(t.saved_failed_iv):<24} {_iv(t.lost_iv):<24} "
                f"{_iv(t.saved_all_iv):<24} {'yes' if c.test_front else 'no'}")
        lines.append("")
    if r.pick is None:
        lines.append(f"no policy saves anything while losing at most {_pct(r.max_lost)} of the "
                     "training split's resolved runs: nothing written")
    else:
        j = r.pick.test.judged if r.pick.test else None
        lines.append(f"the pick: {r.pick.policy.name} ({_figures(r.pick)})")
        if j is not None and j.runs:
            lines.append(f"  held out: {j.lost} of {j.resolved} resolved and {j.caught} of "
                         f"{j.unresolved} failed runs stopped; solve rate {j.solve_rate:.3f} "
                         f"without it, {j.solve_rate_with:.3f} with it")
    if written:
        lines.append(f"wrote {written} (watch --abort-config {written})")
    if r.warnings:
        lines += ["", "What these data cannot support:"]
        lines.extend(f"- {w}" for w in r.warnings)
    return "\n".join(lines) + "\n"


def _described(c: Candidate) -> str:
    return f"tuned by abort-backtest --tune: {_figures(c)}"


def tuned_toml(r: TuneResult) -> str:
    """The policy file: the pick as a ``[[policy]]``, the other kinds' choices commented
    out (several policies stop a run when any one trips, so together they lose more)."""
    assert r.pick is not None
    s = r.split
    out = ["# Abort policies tuned by `streameval abort-backtest --tune` (docs/operate.md,",
           "# \"Choose a policy from your own history\"; docs/outcomes.md §8 defines the figures).",
           f"# {r.known} runs with an outcome, split by {s.by} (--seed {r.seed}): training "
           f"{len(s.train)} runs of {len(s.train_groups)}, held out {len(s.test)} of "
           f"{len(s.test_groups)}.",
           f"# Chosen on the training runs: saves most spend ({r.spend}) on failed runs while "
           f"losing at most {_pct(r.max_lost)}",
           "# of their resolved runs; the held-out figures judge the choice.",
           "# The action is `file` (an ABORT file beside the trace): change it to a webhook or",
           "# a signal as docs/operate.md says.", "",
           f"# the pick: {_figures(r.pick)}",
           format_policy(replace(r.pick.policy, description=_described(r.pick)))]
    others = [c for c in r.chosen.values() if c is not None and c is not r.pick]
    if others:
        out += ["# Each other kind's choice. A run is stopped when any policy trips: together they",
                "# lose more resolved runs than each alone (backtest the file first).", ""]
        for c in others:
            out.append(f"# {_figures(c)}")
            out.extend("# " + line for line in format_policy(
                replace(c.policy, description=_described(c))).splitlines())
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _figures_json(f: Figures | None) -> dict | None:
    return None if f is None else f.to_json()


def tune_json(r: TuneResult) -> dict:
    s = r.split
    return {"runs": r.runs, "known": r.known, "spend": r.spend, "max_lost": r.max_lost,
            "seed": r.seed,
            "split": {"by": s.by, "train_runs": len(s.train), "test_runs": len(s.test),
                      "train": s.train_groups, "test": s.test_groups},
            "fronts": {k: [c.to_json() for c in front] for k, front in r.fronts.items()},
            "chosen": {k: (c.policy.name if c else None) for k, c in r.chosen.items()},
            "pick": r.pick.to_json() if r.pick else None, "warnings": r.warnings}
