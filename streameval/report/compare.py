"""``streameval compare``: arms of records -> paired differences with intervals (JSON-ready).

Every arm after the first (the baseline A) is compared with A on the instances both
scored: per metric, each arm's mean over the pairs that have the metric, the mean paired
difference B - A with its 95% cluster-bootstrap interval and p-value
(``report.bootstrap``), Holm's correction across every test the report shows, and the
number of pairs (the interval is never narrower than the instance-level one:
``bootstrap.paired_estimates``). The per-step coverage curve of each arm (mean over its
paired instances, with a cluster-bootstrap band) goes with it for the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streameval.model import GRANULARITIES
from streameval.report.arms import ArmInstances, InstanceRow
from streameval.report.bootstrap import DEFAULT_RESAMPLES, Estimate, holm, paired_estimates
from streameval.report.fields import Metric

__all__ = ["MIN_PAIRS", "Comparison", "CompareReport", "Curve", "MetricRow", "compare_arms"]

#: below this many pairs an interval is not to be trusted (and the report says so)
MIN_PAIRS = 10
#: curves are drawn up to the longest run, at most this many steps
MAX_CURVE_STEPS = 250


@dataclass(slots=True)
class MetricRow:
    metric: Metric
    mean_a: float | None
    mean_b: float | None
    estimate: Estimate
    p_holm: float | None = None

    @property
    def trusted(self) -> bool:
        return self.estimate.pairs >= MIN_PAIRS

    def worse_than(self, margin: float) -> bool | None:
        """B is worse than A by more than ``margin`` with 95% confidence: for a metric
        where higher is better, the interval's upper end is below -margin; where lower
        is better, its lower end is above +margin. None: there is no interval (no pair
        has the metric, or its pairs are of one repository)."""
        e = self.estimate
        if e.low is None or e.high is None:
            return None
        return e.high < -margin if self.metric.better > 0 else e.low > margin


@dataclass(slots=True)
class Comparison:
    """Arm ``b`` against the baseline ``a`` on their paired instances."""

    a: str
    b: str
    pairs: list[str]
    clusters: int
    only_a: list[str]
    only_b: list[str]
    rows: list[MetricRow] = field(default_factory=list)


@dataclass(slots=True)
class Curve:
    """An arm's mean per-step coverage over its paired instances, with a 95% band."""

    mean: list[float]
    low: list[float]
    high: list[float]
    instances: int


@dataclass(slots=True)
class CompareReport:
    arms: list[ArmInstances]
    comparisons: list[Comparison]
    resamples: int
    seed: int
    #: per arm, per granularity
    curves: dict[str, dict[str, Curve]] = field(default_factory=dict)
    unnamed: int = 0

    @property
    def baseline(self) -> str:
        return self.arms[0].name


def _pair_cluster(a: InstanceRow, b: InstanceRow) -> str:
    """The baseline's repository, unless only the other arm's record named one."""
    if a.cluster.startswith("instance:") and not b.cluster.startswith("instance:"):
        return b.cluster
    return a.cluster


def _compare_two(a: ArmInstances, b: ArmInstances, metrics: Sequence[Metric],
                 resamples: int, seed: int) -> Comparison:
    import numpy as np

    keys = sorted(set(a.rows) & set(b.rows))
    clusters = [_pair_cluster(a.rows[k], b.rows[k]) for k in keys]
    va = np.array([[_nan(a.rows[k].values[m.name]) for m in metrics] for k in keys],
                  dtype=np.float64).reshape(len(keys), len(metrics))
    vb = np.array([[_nan(b.rows[k].values[m.name]) for m in metrics] for k in keys],
                  dtype=np.float64).reshape(len(keys), len(metrics))
    diffs = vb - va                              # NaN when either arm lacks the metric
    estimates = paired_estimates(diffs, clusters, resamples, seed)
    rows = []
    for j, (m, est) in enumerate(zip(metrics, estimates)):
        both = ~np.isnan(diffs[:, j])
        rows.append(MetricRow(m, float(va[both, j].mean()) if both.any() else None,
                              float(vb[both, j].mean()) if both.any() else None, est))
    return Comparison(a.name, b.name, keys, len(set(clusters)),
                      sorted(set(a.rows) - set(b.rows)), sorted(set(b.rows) - set(a.rows)),
                      rows)


def _nan(v: float | None) -> float:
    return float("nan") if v is None else v


def _curves(arm: ArmInstances, keys: Sequence[str], resamples: int, seed: int
            ) -> dict[str, Curve]:
    import numpy as np

    from streameval.report.bootstrap import cluster_index, resample_means

    rows = [arm.rows[k] for k in keys]
    out: dict[str, Curve] = {}
    if not rows:
        return out
    index, n_clusters = cluster_index([r.cluster for r in rows])
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
        point, boot = resample_means(matrix, index, n_clusters, resamples, seed)
        _, plain = resample_means(matrix, list(range(len(rows))), len(rows), resamples, seed)
        # as the intervals: never narrower than the instance-level band
        low = np.minimum(*(np.nanpercentile(b, 2.5, axis=0) for b in (boot, plain)))
        high = np.maximum(*(np.nanpercentile(b, 97.5, axis=0) for b in (boot, plain)))
        out[g] = Curve([float(x) for x in point], [float(x) for x in low],
                       [float(x) for x in high], len(rows))
    return out


def compare_arms(arms: Sequence[ArmInstances], metrics: Sequence[Metric],
                 resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                 curve_resamples: int = 1000, unnamed: int = 0) -> CompareReport:
    """Every arm after the first against the first; Holm's correction over all the
    tests of the report (metrics x comparisons)."""
    if len(arms) < 2:
        raise ValueError("a comparison needs two arms or more")
    comparisons = [_compare_two(arms[0], b, metrics, resamples, seed) for b in arms[1:]]
    flat = [row for c in comparisons for row in c.rows]
    for row, p in zip(flat, holm([row.estimate.p for row in flat])):
        row.p_holm = p
    paired = sorted(set().union(*(c.pairs for c in comparisons)))
    curves = {}
    for arm in arms:
        keys = [k for k in paired if k in arm.rows]
        curves[arm.name] = _curves(arm, keys, curve_resamples, seed)
    return CompareReport(list(arms), comparisons, resamples, seed, curves, unnamed)


def report_json(report: CompareReport) -> dict[str, Any]:
    """The report as plain JSON (``compare --json``)."""
    return {
        "baseline": report.baseline,
        "resamples": report.resamples,
        "seed": report.seed,
        "interval": 0.95,
        "clustered_by": "repository",
        "min_pairs": MIN_PAIRS,
        "records_without_arm": report.unnamed,
        "arms": [{"name": a.name, "runs": a.runs, "errors": a.errors,
                  "instances": len(a.rows), "instances_with_errors_only": a.errors_only}
                 for a in report.arms],
        "comparisons": [{
            "a": c.a, "b": c.b, "pairs": len(c.pairs), "clusters": c.clusters,
            "only_a": c.only_a, "only_b": c.only_b,
            "metrics": [{
                "metric": r.metric.name, "better": "higher" if r.metric.better > 0 else "lower",
                "mean_a": r.mean_a, "mean_b": r.mean_b, "difference": r.estimate.mean,
                "low": r.estimate.low, "high": r.estimate.high, "p": r.estimate.p,
                "p_holm": r.p_holm, "pairs": r.estimate.pairs, "clusters": r.estimate.clusters,
                "trusted": r.trusted} for r in c.rows],
        } for c in report.comparisons],
        "curves": {arm: {g: {"mean": cv.mean, "low": cv.low, "high": cv.high,
                             "instances": cv.instances} for g, cv in by_g.items()}
                   for arm, by_g in report.curves.items()},
    }
