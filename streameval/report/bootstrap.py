"""Paired differences with honest error bars: a cluster bootstrap, and Holm's correction.

Two agents run on the same instances; instance difficulty varies far more than the
agents do, so the question is answered on the *paired* differences d_i = B_i - A_i.
Instances of one repository are alike (same code base, same test style), so they are
not independent draws: the bootstrap resamples whole repositories (clusters) with
replacement and recomputes the mean difference from the instances they bring (Miller,
"Adding Error Bars to Evals", arXiv 2411.00640). With one instance per cluster it is the
ordinary paired bootstrap.

The rule (docs/compare.md, "Statistics"):

- the estimate is the mean of d_i over the pairs that have the metric;
- with the pairs of a single repository there are no repositories to resample: the
  clustered bootstrap gives no interval (``compare`` then reports the instance-level
  one, which speaks for that repository only);
- one resample draws C clusters out of the C present, uniformly with replacement, and
  takes sum(d) / count over the instances of the drawn clusters (a cluster drawn twice
  counts twice); a resample that brings no pair with the metric is left out;
- the 95% interval is the 2.5th and 97.5th percentiles of the resampled means (linear
  interpolation between order statistics);
- the two-sided p-value for "no difference" is 2 · (1 + the smaller of the number of
  resampled means <= 0 and >= 0) / (1 + resamples), at most 1: consistent with the
  interval (0 outside it means p < 0.05 up to Monte-Carlo error), never exactly 0;
- Holm's step-down correction makes the p-values of several metrics safe to read
  together: sorted ascending, the i-th of m is multiplied by (m - i + 1), and each
  adjusted value is at least the one before it (and at most 1).

- a cluster bootstrap over few clusters understates the spread (with two repositories
  it can only mix two means), so the interval ``compare`` reports (``paired_estimates``)
  is never narrower than the instance-level one: its ends are the outer ends of the
  clustered and the unclustered intervals, and its p-value the larger of the two. It is
  the clustered interval whenever outcomes correlate within repositories, which is when
  clustering matters.

Every metric is resampled with the same draws, as one matrix product, so 10,000
resamples of 40 metrics over 500 instances take well under a second.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Estimate", "cluster_bootstrap", "cluster_index", "holm", "paired_estimates",
           "resample_means"]

#: the interval's coverage
LEVEL = 0.95
DEFAULT_RESAMPLES = 10_000


@dataclass(frozen=True, slots=True)
class Estimate:
    """One metric's paired difference: the mean, its interval, p-value and pairs."""

    mean: float | None
    low: float | None
    high: float | None
    p: float | None
    pairs: int
    clusters: int


def cluster_index(keys: Sequence[Hashable]) -> tuple[list[int], int]:
    """Each row's cluster as 0..C-1 (in order of first appearance), and C."""
    seen: dict[Hashable, int] = {}
    index = [seen.setdefault(k, len(seen)) for k in keys]
    return index, len(seen)


#: weights held at once (resamples x clusters): bounds memory for large unclustered data
_BLOCK = 4_000_000


def resample_means(values: np.ndarray, clusters: Sequence[int], n_clusters: int,
                   resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The column means of ``values`` (rows x metrics, NaN where missing) and their
    cluster-bootstrap replicates (resamples x metrics, NaN where a resample has no
    value), from one set of draws shared by every column.

    One resample is a multinomial row: how often each of the C clusters is drawn in C
    draws with replacement; its means are (row @ cluster sums) / (row @ cluster counts).
    """
    import numpy as np

    present = ~np.isnan(values)
    idx = np.asarray(clusters, dtype=np.int64)
    sums = np.zeros((n_clusters, values.shape[1]))
    counts = np.zeros((n_clusters, values.shape[1]))
    np.add.at(sums, idx, np.where(present, values, 0.0))
    np.add.at(counts, idx, present.astype(np.float64))
    rng = np.random.default_rng(seed)
    uniform = np.full(n_clusters, 1.0 / n_clusters)
    boot = np.empty((resamples, values.shape[1]))
    step = max(1, _BLOCK // n_clusters)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = counts.sum(axis=0)
        point = np.where(total > 0, sums.sum(axis=0) / np.where(total > 0, total, 1), np.nan)
        for start in range(0, resamples, step):
            w = rng.multinomial(n_clusters, uniform,
                                size=min(step, resamples - start)).astype(np.float64)
            num, den = w @ sums, w @ counts
            boot[start:start + len(w)] = np.where(den > 0, num / np.where(den > 0, den, 1),
                                                  np.nan)
    return point, boot


def cluster_bootstrap(diffs: np.ndarray, cluster_keys: Sequence[Hashable],
                      resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> list[Estimate]:
    """Per column of ``diffs`` (pairs x metrics, NaN where a pair lacks the metric):
    the mean difference, its 95% interval and p-value, from ``resamples`` cluster
    resamples (``cluster_keys``: each pair's repository; distinct keys for the
    ordinary paired bootstrap)."""
    import numpy as np

    diffs = np.asarray(diffs, dtype=np.float64)
    if diffs.ndim != 2 or diffs.shape[0] != len(cluster_keys):
        raise ValueError("diffs must be pairs x metrics, one cluster key per pair")
    index, n_clusters = cluster_index(cluster_keys)
    if diffs.shape[0] == 0:
        return [Estimate(None, None, None, None, 0, 0) for _ in range(diffs.shape[1])]
    point, boot = resample_means(diffs, index, n_clusters, resamples, seed)
    present = ~np.isnan(diffs)
    pairs = present.sum(axis=0)
    out: list[Estimate] = []
    tail = (1 - LEVEL) / 2 * 100
    for m in range(diffs.shape[1]):
        if pairs[m] == 0:
            out.append(Estimate(None, None, None, None, 0, 0))
            continue
        n_cl = len({index[i] for i in np.flatnonzero(present[:, m])})
        if n_cl < 2:
            # one repository: every resample is the same sample, so there is no error
            # bar to give, and a p-value from it would be a wrong number
            out.append(Estimate(float(point[m]), None, None, None, int(pairs[m]), n_cl))
            continue
        reps = boot[:, m][~np.isnan(boot[:, m])]
        low, high = np.percentile(reps, [tail, 100 - tail])
        below, above = int((reps <= 0).sum()), int((reps >= 0).sum())
        p = min(1.0, 2 * (1 + min(below, above)) / (1 + len(reps)))
        out.append(Estimate(float(point[m]), float(low), float(high), p, int(pairs[m]), n_cl))
    return out


def paired_estimates(diffs: np.ndarray, cluster_keys: Sequence[Hashable],
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> list[Estimate]:
    """The clustered estimates, each widened to the instance-level one where that is
    wider (its interval's outer ends, the larger p-value): the interval ``compare``
    reports. Pairs of a single repository have no clustered interval: the
    instance-level one stands alone (it speaks for that repository only)."""
    clustered = cluster_bootstrap(diffs, cluster_keys, resamples, seed)
    plain = cluster_bootstrap(diffs, list(range(len(cluster_keys))), resamples, seed)
    out = []
    for c, u in zip(clustered, plain):
        if c.low is None or u.low is None:
            out.append(c if u.low is None else Estimate(u.mean, u.low, u.high, u.p, c.pairs,
                                                        c.clusters))
            continue
        out.append(Estimate(c.mean, min(c.low, u.low), max(c.high, u.high),
                            max(c.p, u.p), c.pairs, c.clusters))
    return out


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values given (None stays None, and does
    not count in m)."""
    known = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(known)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
