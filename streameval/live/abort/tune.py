"""Policies chosen on data and tested on other data (``abort-backtest --tune``,
docs/outcomes.md §8 defines every figure).

1. **Candidates.** Each policy kind's threshold on a fixed ladder (``GRIDS``: the same
   for every fleet, so nothing about the held-out runs shapes them).
2. **One replay.** Every trace is replayed once through one engine holding every
   candidate (``backtest``): each candidate's stops are the engine's, as ``watch``
   would make them.
3. **The split, by repository.** Runs of one repository are alike, so a policy tuned on
   some of a repository's runs and tested on others would look better than it is. The
   repositories are shuffled (``--seed``) and each is put on the held-out side when
   that brings the held-out share of runs closer to ``--test-share``; no repository is
   on both sides. When the mirror of that split is as near the share (at a half,
   always), the side with more repositories is held out: the held-out intervals need
   repositories, training needs only runs. With a single repository the split is by
   instance, and said so.
4. **Training.** Per kind, the candidates on the training runs' Pareto front of (spend
   saved on failed runs: more is better; resolved runs lost: fewer is better); the
   kind's choice is the one that saves most while losing at most ``--max-lost`` of the
   training split's resolved runs. The pick is the choice that saves most.
5. **Held out.** The front and the choices are measured on the held-out runs, with
   intervals clustered by repository (``report.outcome_stats``). Those figures judge
   the choice; they never make it (chosen on held-out data, a figure would be as
   optimistic as the choice was lucky).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from streameval.live.abort.backtest import RunOutcome, Stop, stop_of
from streameval.live.abort.judged import Judged, judge
from streameval.live.abort.policy import AbortConfig, Policy
from streameval.report.arms import cluster_of
from streameval.report.outcome_stats import Interval, ratio_interval, share_interval

__all__ = ["GOLD_KINDS", "GRIDS", "SPENDS", "Candidate", "Split", "TuneResult", "candidates",
           "split_runs", "tune"]


def _ladder(low: float, high: float) -> list[float]:
    """1, 2, 5 times powers of ten from ``low`` to ``high``."""
    out, scale = [], low
    while scale <= high:
        out.extend(v for v in (scale, 2 * scale, 5 * scale) if v <= high)
        scale *= 10
    return [round(v, 10) for v in out]


_AFTER = (5, 10, 20, 40)
_SHARES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: kind -> its thresholds (the kind's first key), or (threshold, after_steps) pairs
GRIDS: dict[str, list] = {
    "max_steps": [5, 7, 10, 15, 20, 25, 30, 40, 50, 60, 80, 100, 150, 200, 300],
    "tokens": _ladder(10_000, 50_000_000),
    "cost": _ladder(0.01, 100.0),
    "no_new_files": [3, 5, 7, 10, 15, 20, 30, 50],
    "repeats": [2, 3, 4, 5, 7, 10, 15, 20],
    "reread_share": [(v, a) for v in _SHARES for a in _AFTER],
    "stagnation": [3, 5, 7, 10, 15, 20, 30, 50],
    "precision": [(v, a) for v in (0.01, 0.02, 0.05, 0.1, 0.2) for a in _AFTER],
}
#: kinds that need gold (tuned when some run has it). ``redundancy`` is not tuned: at
#: the line granularity it is ``reread_share`` (docs/outcomes.md §2), which needs no gold
GOLD_KINDS = ("stagnation", "precision")
#: what "spend" is measured in: the run's own figure, and what a stop saved of it
SPENDS = ("tokens", "cost_usd", "tool_calls", "steps")


def candidates(kinds: Sequence[str]) -> list[Policy]:
    """Every candidate of ``kinds``, named ``kind-threshold`` (``-afterN``), action file."""
    out = []
    for kind in kinds:
        for point in GRIDS[kind]:
            limit, after = point if isinstance(point, tuple) else (point, 0)
            shown = str(int(limit)) if float(limit).is_integer() else f"{limit:g}"
            name = f"{kind}-{shown}" + (f"-after{after}" if after else "")
            out.append(Policy(name=name, kind=kind, action="file", limit=float(limit),
                              after_steps=after))
    return out


def candidate_config(kinds: Sequence[str]) -> AbortConfig:
    return AbortConfig(tuple(candidates(kinds)), source="<tune>")


# --------------------------------------------------------------------------- the split


@dataclass(slots=True)
class Split:
    """Which runs train and which are held out; ``by`` is repository (or instance)."""

    by: str
    train: list[int]
    test: list[int]
    train_groups: list[str]
    test_groups: list[str]


def _group(o: RunOutcome, by: str) -> str:
    if by == "instance":
        return o.instance_id
    repo = cluster_of({"repo": o.repo, "instance_id": o.instance_id})[0]
    return repo if repo is not None else f"instance:{o.instance_id}"


def split_runs(runs: Sequence[RunOutcome], test_share: float = 0.5, seed: int = 0) -> Split:
    """The module's split: groups (repositories; instances when there is one repository)
    in a shuffled order, each held out when that brings the held-out share of runs
    nearer ``test_share``; both sides get a group at least."""
    by = "repository"
    if len({_group(o, by) for o in runs}) < 2:
        by = "instance"
    sizes: dict[str, int] = {}
    for o in runs:
        g = _group(o, by)
        sizes[g] = sizes.get(g, 0) + 1
    order = sorted(sizes)
    random.Random(seed).shuffle(order)
    target = test_share * len(runs)
    held: set[str] = set()
    count = 0
    for g in order:
        if abs(count + sizes[g] - target) < abs(count - target):
            held.add(g)
            count += sizes[g]
    if not held and order:
        held.add(order[0])
    if len(held) == len(order) and len(order) > 1:
        held.discard(order[-1])
    rest = set(order) - held
    mirror = len(runs) - count
    if abs(mirror - target) <= abs(count - target) and len(rest) > len(held):
        # the mirror is as near the target (a half: always): hold out the side with more
        # repositories, since the held-out figures' intervals need them
        held = rest
    test = [i for i, o in enumerate(runs) if _group(o, by) in held]
    train = [i for i, o in enumerate(runs) if _group(o, by) not in held]
    return Split(by, train, test, sorted(set(order) - held), sorted(held))


# --------------------------------------------------------------------------- figures


def _spent(o: RunOutcome, spend: str) -> float | None:
    tokens, cost = o.spent
    return {"tokens": tokens, "cost_usd": cost, "tool_calls": o.tool_calls,
            "steps": o.steps}[spend]


def _saved(st: Stop, spend: str) -> float | None:
    return {"tokens": st.saved.tokens, "cost_usd": st.saved.cost_usd,
            "tool_calls": st.saved_calls, "steps": st.saved_steps}[spend]


@dataclass(slots=True)
class Figures:
    """A candidate on one side of the split (docs/outcomes.md §8)."""

    judged: Judged
    #: spend saved on failed runs, and on all runs, as shares of the spend of every run
    saved_failed: float
    saved_all: float
    lost: float
    #: with intervals (held-out side only)
    saved_failed_iv: Interval | None = None
    saved_all_iv: Interval | None = None
    lost_iv: Interval | None = None

    def to_json(self) -> dict:
        out = {"saved_on_failed_share": self.saved_failed, "saved_share": self.saved_all,
               "lost_share": self.lost, "judged": self.judged.to_json()}
        for key, iv in (("saved_on_failed_interval", self.saved_failed_iv),
                        ("saved_interval", self.saved_all_iv), ("lost_interval", self.lost_iv)):
            if iv is not None:
                out[key] = iv.to_json()
        return out


def figures(runs: Sequence[RunOutcome], stops: Sequence[Stop | None], spend: str,
            intervals: bool = False) -> Figures:
    """A candidate's figures over ``runs`` (each with its stop, or None), those with a
    known outcome; spend shares over the runs whose spend is known."""
    judged = judge(zip(runs, stops))
    x_fail, x_all, y, clusters = [], [], [], []
    lost_flags, lost_clusters = [], []
    for o, st in zip(runs, stops):
        if o.resolved is None:
            continue
        if st is not None and st.after_last_call:
            st = None   # it changed nothing (``judged``)
        group = _group(o, "repository")
        if o.resolved:
            lost_flags.append(st is not None)
            lost_clusters.append(group)
        total = _spent(o, spend)
        saved = _saved(st, spend) if st is not None else 0.0
        if total is None or saved is None:
            continue
        y.append(float(total))
        x_all.append(float(saved))
        x_fail.append(0.0 if o.resolved else float(saved))
        clusters.append(group)
    spent = sum(y)
    out = Figures(judged, sum(x_fail) / spent if spent else 0.0,
                  sum(x_all) / spent if spent else 0.0, judged.lost_share or 0.0)
    if intervals:
        out.saved_failed_iv = ratio_interval(x_fail, y, clusters)
        out.saved_all_iv = ratio_interval(x_all, y, clusters)
        out.lost_iv = share_interval(lost_flags, lost_clusters)
    return out


# --------------------------------------------------------------------------- tuning


@dataclass(slots=True)
class Candidate:
    policy: Policy
    train: Figures
    test: Figures | None = None
    #: on the training front of its kind; still on the front among them held out
    front: bool = False
    test_front: bool = False

    def to_json(self) -> dict:
        p = self.policy
        return {"policy": p.name, "kind": p.kind, "limit": p.limit,
                "after_steps": p.after_steps, "train": self.train.to_json(),
                "test": self.test.to_json() if self.test else None,
                "front": self.front, "held_out_front": self.test_front}


@dataclass(slots=True)
class TuneResult:
    split: Split
    spend: str
    max_lost: float
    runs: int
    known: int
    #: kind -> its candidates on the training front (with their held-out figures)
    fronts: dict[str, list[Candidate]]
    #: kind -> the candidate chosen on the training split (None: none keeps to max_lost)
    chosen: dict[str, Candidate | None]
    pick: Candidate | None
    seed: int = 0
    warnings: list[str] = field(default_factory=list)


def _front(cands: list[Candidate], key) -> list[Candidate]:
    """The Pareto front of (saved: more, lost: fewer) under ``key`` (train or test);
    a candidate that saves nothing is not on it (it is no policy at all)."""
    out: list[Candidate] = []
    best = 0.0
    for c in sorted(cands, key=lambda c: (key(c).lost, -key(c).saved_failed)):
        if key(c).saved_failed > best:
            out.append(c)
            best = key(c).saved_failed
    return out


def _choose(cands: list[Candidate], max_lost: float) -> Candidate | None:
    """What saves most on the training runs while losing at most ``max_lost`` of their
    resolved runs (ties: fewer lost, then the later stop: the higher threshold)."""
    ok = [c for c in cands if c.train.lost <= max_lost + 1e-12 and c.train.saved_failed > 0]
    if not ok:
        return None
    return max(ok, key=lambda c: (c.train.saved_failed, -c.train.lost, c.policy.limit))


def tune(runs: Sequence[RunOutcome], kinds: Sequence[str], spend: str = "tokens",
         max_lost: float = 0.02, test_share: float = 0.5, seed: int = 0) -> TuneResult:
    """The module's steps 3-5 over runs replayed with ``candidate_config(kinds)``."""
    known = [o for o in runs if o.resolved is not None]
    split = split_runs(known, test_share, seed)
    train = [known[i] for i in split.train]
    test = [known[i] for i in split.test]
    policies = candidates(kinds)
    fronts: dict[str, list[Candidate]] = {}
    chosen: dict[str, Candidate | None] = {}
    for kind in kinds:
        cands = []
        for p in (q for q in policies if q.kind == kind):
            stops = [stop_of(o, p) if p.name in o.stops else None for o in train]
            cands.append(Candidate(p, figures(train, stops, spend)))
        front = _front(cands, lambda c: c.train)
        for c in front:
            c.front = True
            c.test = figures(test, [stop_of(o, c.policy) if c.policy.name in o.stops else None
                                    for o in test], spend, intervals=True)
        for c in _front(front, lambda c: c.test):
            c.test_front = True
        fronts[kind] = front
        chosen[kind] = _choose(front, max_lost)
    picks = [c for c in chosen.values() if c is not None]
    pick = max(picks, key=lambda c: c.train.saved_failed) if picks else None
    result = TuneResult(split, spend, max_lost, len(runs), len(known), fronts, chosen, pick,
                        seed)
    result.warnings = _warnings(result, train, test)
    return result


def _warnings(r: TuneResult, train: list[RunOutcome], test: list[RunOutcome]) -> list[str]:
    out = []
    if r.split.by == "instance":
        out.append("one repository: the split is by instance, so held-out figures speak "
                   "for this repository's tasks only")
    for side, group, runs in (("training", r.split.train_groups, train),
                              ("held-out", r.split.test_groups, test)):
        resolved = sum(1 for o in runs if o.resolved)
        failed = len(runs) - resolved
        if resolved < 10 or failed < 10:
            out.append(f"the {side} split has {resolved} resolved and {failed} failed run(s): "
                       "fewer than 10 of either, too few to tune or judge a policy on")
        if r.split.by == "repository" and len(group) < 3:
            out.append(f"the {side} split has {len(group)} repositor"
                       f"{'y' if len(group) == 1 else 'ies'}: its figures speak for "
                       "them alone")
    if r.pick is not None and r.pick.test is not None and r.pick.test.lost > r.max_lost:
        out.append(f"the pick lost {r.pick.test.lost:.1%} of the held-out resolved runs, more "
                   f"than --max-lost {r.max_lost:.1%}: on other runs it may lose more than "
                   "it did in training")
    unknown = r.runs - r.known
    if unknown:
        out.append(f"{unknown} run(s) have no outcome: left out of tuning")
    return out
