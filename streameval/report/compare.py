"""``streameval compare``: arms of records -> paired differences with intervals (JSON-ready).

Every arm after the first (the baseline A) is compared with A on the instances both
scored (``report.arms.pair_arms``): per metric, each arm's mean over the pairs that have
the metric, the mean paired difference B - A with its 95% interval and p-value over the
unit stated (``report.inference.clustered_mean``: repositories, or instances where a
metric has 2 repositories or fewer, or ``unit="instance"``), Holm's correction across
every test the report shows, the number of pairs and repositories, and every reason not
to trust a row. The per-step coverage curve of each arm (mean over its paired
instances, with its band over the same unit) goes with it for the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from streameval.model import GRANULARITIES
from streameval.report.arms import ArmInstances, Pairing, pair_arms
from streameval.report.fields import FAMILIES, Metric
from streameval.report.inference import (
    DEFAULT_FLIPS,
    LEVEL,
    MIN_PAIRS,
    MIN_REPOSITORIES,
    MeanInference,
    clustered_mean,
    holm,
    mean_band,
)

__all__ = ["KEY_METRICS", "MISSING_MARGIN", "Comparison", "CompareReport", "Curve", "MetricRow",
           "compare_arms", "ordered", "report_json", "unpaired_metrics"]

#: the metrics a comparison shows first, in this order (the rest by family)
KEY_METRICS = ("line.f1", "resolved", "tokens", "cost_usd", "steps")
#: arms whose losses (instances without a score) differ by more than this many percentage
#: points make every row untrusted; B losing the more fails ``--fail-if-worse``
MISSING_MARGIN = 5.0
#: curves are drawn up to the longest run, at most this many steps
MAX_CURVE_STEPS = 250
#: significance, for the marks of the table and the page (two-sided, Holm-corrected)
ALPHA = 1 - LEVEL


@dataclass(slots=True)
class MetricRow:
    metric: Metric
    mean_a: float | None
    mean_b: float | None
    inference: MeanInference
    #: the pairs' differences (NaN where an arm lacks the metric) and repositories: what
    #: a gate tests again against its margin
    diffs: Any = None
    clusters: Sequence[str | None] = ()
    p_holm: float | None = None

    @property
    def trusted(self) -> bool:
        return self.inference.trusted

    @property
    def reason(self) -> str | None:
        return self.inference.reason

    @property
    def significant(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA

    @property
    def better(self) -> bool | None:
        """Whether B is the better arm on this metric (None: no difference)."""
        d = self.inference.estimate
        return None if not d else (d > 0) == (self.metric.better > 0)


@dataclass(slots=True)
class Comparison:
    """Arm ``b`` against the baseline ``a`` on their paired instances."""

    a: str
    b: str
    pairing: Pairing
    rows: list[MetricRow] = field(default_factory=list)
    #: the reasons no row of it is to be trusted (an arm's losses), in every row's too
    shared: tuple[str, ...] = ()

    @property
    def pairs(self) -> list[str]:
        """The paired instances both arms scored (or ``--missing worst`` made up); the
        pairs of their outcome alone (``Pairing.outcome_only``) are not among them."""
        alone = set(self.pairing.outcome_only)
        return [k for k in self.pairing.keys if k not in alone]

    @property
    def clusters(self) -> int:
        """Repositories among the pairs (named ones)."""
        return len({c for c in self.pairing.clusters if c is not None})

    @property
    def unnamed(self) -> list[str]:
        """The paired instances whose repository no record names."""
        return [k for k, c in zip(self.pairing.keys, self.pairing.clusters) if c is None]

    @property
    def only_a(self) -> list[str]:
        return self.pairing.only_a

    @property
    def only_b(self) -> list[str]:
        return self.pairing.only_b

    @property
    def lost_points(self) -> tuple[float, float]:
        """The shares of the comparison's instances A and B have no score for, in
        percentage points."""
        p = self.pairing
        n = max(1, p.instances)
        return 100 * len(p.lost_a) / n, 100 * len(p.lost_b) / n

    def losses(self) -> str:
        p = self.pairing
        return (f"{self.b} has no score for {len(p.lost_b)} of {p.instances} instances, "
                f"{self.a} for {len(p.lost_a)}")


@dataclass(slots=True)
class Curve:
    """An arm's mean per-step coverage over its paired instances, with a 95% band over
    ``unit``."""

    mean: list[float]
    low: list[float]
    high: list[float]
    instances: int
    unit: str = "repository"


@dataclass(slots=True)
class CompareReport:
    arms: list[ArmInstances]
    comparisons: list[Comparison]
    #: what was asked for: "repository" or "instance"
    unit: str = "repository"
    missing: str = "drop"
    missing_margin: float = MISSING_MARGIN
    flips: int = DEFAULT_FLIPS
    seed: int = 0
    #: per arm, per granularity
    curves: dict[str, dict[str, Curve]] = field(default_factory=dict)
    unnamed: int = 0

    @property
    def baseline(self) -> str:
        return self.arms[0].name

    @property
    def tests(self) -> int:
        return sum(r.inference.p is not None for c in self.comparisons for r in c.rows)


def _losses(c: Comparison, margin: float) -> str | None:
    """The reason every row of ``c`` is untrusted when the arms lost different shares of
    the instances (a metric's pairs are then those the losing arm happened to finish)."""
    ra, rb = c.lost_points
    if abs(rb - ra) <= margin:
        return None
    return f"{c.losses()}: {abs(rb - ra):.0f} points apart (margin {margin:g})"


def _compare_two(a: ArmInstances, b: ArmInstances, metrics: Sequence[Metric], unit: str,
                 missing: str, margin: float, flips: int, seed: int) -> Comparison:
    import numpy as np

    pairing = pair_arms(a, b, metrics, missing)
    c = Comparison(a.name, b.name, pairing)
    losses = _losses(c, margin)
    c.shared = (losses,) if losses else ()
    diffs = pairing.b - pairing.a                   # NaN when either arm lacks the metric
    for j, m in enumerate(metrics):
        both = ~np.isnan(diffs[:, j])
        inf = clustered_mean(diffs[:, j], pairing.clusters, unit=unit, binary=m.binary,
                             bounds=(-1.0, 1.0) if m.scale == "share" else None,
                             flips=flips, seed=seed)
        inf = replace(inf, reasons=inf.reasons + c.shared)
        c.rows.append(MetricRow(m, float(pairing.a[both, j].mean()) if both.any() else None,
                                float(pairing.b[both, j].mean()) if both.any() else None,
                                inf, diffs[:, j], pairing.clusters))
    return c


def _curves(arm: ArmInstances, keys: Sequence[str], unit: str) -> dict[str, Curve]:
    import numpy as np

    rows = [arm.rows[k] for k in keys]
    out: dict[str, Curve] = {}
    if not rows:
        return out
    for g in GRANULARITIES:
        length = min(MAX_CURVE_STEPS, max((len(r.curve.get(g, [])) for r in rows), default=0))
        if length == 0:
            continue
        matrix = np.zeros((len(rows), length))
        for i, r in enumerate(rows):
            c = r.curve.get(g, [])[:length]
            last = c[-1] if c else 0.0
            matrix[i, :len(c)] = c
            matrix[i, len(c):] = last
        mean, low, high, used = mean_band(matrix, [r.cluster for r in rows], unit)
        out[g] = Curve([float(x) for x in mean], [float(x) for x in low],
                       [float(x) for x in high], len(rows), used)
    return out


def compare_arms(arms: Sequence[ArmInstances], metrics: Sequence[Metric], *,
                 unit: str = "repository", missing: str = "drop",
                 missing_margin: float = MISSING_MARGIN, flips: int = DEFAULT_FLIPS,
                 seed: int = 0, unnamed: int = 0) -> CompareReport:
    """Every arm after the first against the first; Holm's correction over all the
    tests of the report (metrics x comparisons)."""
    if len(arms) < 2:
        raise ValueError("a comparison needs two arms or more")
    comparisons = [_compare_two(arms[0], b, metrics, unit, missing, missing_margin, flips, seed)
                   for b in arms[1:]]
    flat = [row for c in comparisons for row in c.rows]
    for row, p in zip(flat, holm([row.inference.p for row in flat])):
        row.p_holm = p
    paired = sorted(set().union(*(c.pairs for c in comparisons)))
    curves = {}
    for arm in arms:
        scored = arm.scored
        curves[arm.name] = _curves(arm, [k for k in paired if k in scored], unit)
    return CompareReport(list(arms), comparisons, unit, missing, missing_margin, flips, seed,
                         curves, unnamed)


def ordered(rows: Sequence[MetricRow]) -> list[tuple[str, list[MetricRow]]]:
    """The rows as the table and the page show them: the key metrics first (line F1,
    solve rate, tokens, cost, steps), then each family in ``FAMILIES`` order. Rows no
    pair has are left out (``unpaired_metrics`` names them); a group with none is not
    shown."""
    by_name = {r.metric.name: r for r in rows}
    key = [by_name[n] for n in KEY_METRICS if n in by_name and by_name[n].inference.pairs]
    out = [("key metrics", key)] if key else []
    for fam in FAMILIES:
        rest = [r for r in rows if r.metric.family == fam and r.metric.name not in KEY_METRICS
                and r.inference.pairs]
        if rest:
            out.append((fam, rest))
    return out


def unpaired_metrics(rows: Sequence[MetricRow]) -> list[str]:
    """The metrics no pair has (no patch for EditLoc, no usage for tokens, no outcomes)."""
    return [r.metric.name for r in rows if not r.inference.pairs]


def _row_json(r: MetricRow) -> dict[str, Any]:
    e = r.inference
    return {"metric": r.metric.name, "better": "higher" if r.metric.better > 0 else "lower",
            "mean_a": r.mean_a, "mean_b": r.mean_b, "difference": e.estimate,
            "low": e.low, "high": e.high, "p": e.p, "p_holm": r.p_holm, "p_t": e.p_t,
            "p_exact": e.p_exact, "df": e.df, "pairs": e.pairs, "clusters": e.clusters,
            "unit": e.unit, "units": e.units, "trusted": r.trusted, "reason": r.reason}


def report_json(report: CompareReport) -> dict[str, Any]:
    """The report as plain JSON (``compare --json``)."""
    return {
        "baseline": report.baseline,
        "interval": LEVEL,
        "unit": report.unit,
        "method": "CR2 standard error, Bell-McCaffrey degrees of freedom; p the larger of "
                  "the t-test's and the cluster sign-flip test's (exact up to 12 units); "
                  "McNemar's exact test for 0/1 outcomes at the instance level",
        "flips": report.flips,
        "seed": report.seed,
        "missing": report.missing,
        "missing_margin": report.missing_margin,
        "min_pairs": MIN_PAIRS,
        "min_repositories": MIN_REPOSITORIES,
        "records_without_arm": report.unnamed,
        "arms": [{"name": a.name, "runs": a.runs, "errors": a.errors,
                  "instances": len(a.scored), "instances_with_errors_only": a.errors_only}
                 for a in report.arms],
        "comparisons": [{
            "a": c.a, "b": c.b, "pairs": len(c.pairs), "clusters": c.clusters,
            "clusters_from": {s: c.pairing.sources.count(s) for s in ("repo", "id", "none")},
            "without_repository": c.unnamed,
            "outcome_only": c.pairing.outcome_only, "only_a": c.only_a, "only_b": c.only_b,
            "instances": c.pairing.instances, "lost_a": c.pairing.lost_a,
            "lost_b": c.pairing.lost_b, "imputed_a": c.pairing.imputed_a,
            "imputed_b": c.pairing.imputed_b,
            "metrics": [_row_json(r) for r in c.rows],
        } for c in report.comparisons],
        "curves": {arm: {g: {"mean": cv.mean, "low": cv.low, "high": cv.high,
                             "instances": cv.instances, "unit": cv.unit}
                         for g, cv in by_g.items()}
                   for arm, by_g in report.curves.items()},
    }
