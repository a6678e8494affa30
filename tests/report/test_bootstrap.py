"""The paired cluster bootstrap and Holm's correction against direct computations.

- the paired bootstrap against a plain resampling loop written here: the same interval
  within Monte-Carlo error, compared on the *quantile level* (the reference's 1.3% and
  3.7% quantiles bracket our 2.5% end), so a bootstrap distribution with atoms cannot
  make the test flaky;
- the clustered bootstrap against a hand-worked example;
- Holm's correction against its definition;
- clustered error bars never narrower than unclustered ones when outcomes correlate
  within a repository.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.report.bootstrap import cluster_bootstrap, holm, paired_estimates, resample_means

REF_RESAMPLES = 6000
OUR_RESAMPLES = 6000


def reference_interval(d: list[float], levels: list[float], resamples: int, seed: int):
    """The paired bootstrap as a textbook loop: draw n pairs with replacement, take the
    mean difference; quantiles of the sorted means at ``levels`` (nearest rank)."""
    rng = random.Random(seed)
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return [means[min(resamples - 1, max(0, round(q * (resamples - 1))))] for q in levels]


pairs = st.lists(st.floats(-50, 50, allow_nan=False, allow_infinity=False, width=32),
                 min_size=8, max_size=30)


@settings(max_examples=40, deadline=None)
@given(d=pairs, seed=st.integers(0, 2**16))
def test_paired_bootstrap_matches_a_direct_resampling_loop(d, seed):
    [est] = cluster_bootstrap(np.array(d)[:, None], list(range(len(d))), OUR_RESAMPLES, seed)
    assert est.mean == pytest.approx(sum(d) / len(d), abs=1e-9)
    lo_band = reference_interval(d, [0.013, 0.037], REF_RESAMPLES, seed)
    hi_band = reference_interval(d, [0.963, 0.987], REF_RESAMPLES, seed + 1)
    tol = 1e-9 * (1 + max(abs(x) for x in d))
    assert lo_band[0] - tol <= est.low <= lo_band[1] + tol
    assert hi_band[0] - tol <= est.high <= hi_band[1] + tol
    assert est.pairs == len(d) and est.clusters == len(d)


def test_clustered_bootstrap_by_hand():
    """Repository X has pairs with d = 1 and 3, repository Y one with d = 5. A resample
    draws two repositories with replacement: XX (1/4) gives (1+3+1+3)/4 = 2, XY or YX
    (1/2) gives (1+3+5)/3 = 3, YY (1/4) gives 5. The estimate is 9/3 = 3; the 2.5% and
    97.5% quantiles of that distribution are 2 and 5; every resample is > 0, so p is
    2 / (resamples + 1)."""
    d = np.array([[1.0], [3.0], [5.0]])
    [est] = cluster_bootstrap(d, ["X", "X", "Y"], 10_000, seed=7)
    assert (est.mean, est.low, est.high) == (3.0, 2.0, 5.0)
    assert est.p == pytest.approx(2 / 10_001)
    assert (est.pairs, est.clusters) == (3, 2)
    # and the distribution itself: 2, 3 and 5 in the proportions 1/4, 1/2, 1/4
    _, boot = resample_means(d, [0, 0, 1], 2, 40_000, seed=3)
    values, counts = np.unique(boot[:, 0], return_counts=True)
    assert list(values) == [2.0, 3.0, 5.0]
    assert counts / counts.sum() == pytest.approx([0.25, 0.5, 0.25], abs=0.01)


def test_one_repository_gives_no_interval_and_no_p_value():
    [est] = cluster_bootstrap(np.array([[1.0], [2.0], [4.0]]), ["X", "X", "X"], 1000)
    assert est.mean == pytest.approx(7 / 3) and est.low is est.high is est.p is None


def test_missing_values_are_left_out_per_metric():
    d = np.array([[1.0, np.nan], [2.0, 4.0], [3.0, np.nan], [4.0, 6.0]])
    a, b = cluster_bootstrap(d, ["r1", "r2", "r3", "r4"], 2000)
    assert a.mean == 2.5 and a.pairs == 4
    assert b.mean == 5.0 and b.pairs == 2 and b.clusters == 2


def test_no_difference_has_p_1():
    [est] = cluster_bootstrap(np.zeros((12, 1)), [i % 4 for i in range(12)], 2000)
    assert (est.mean, est.low, est.high, est.p) == (0.0, 0.0, 0.0, 1.0)


def test_the_same_seed_gives_the_same_interval():
    rng = np.random.default_rng(5)
    d = rng.normal(size=(40, 3))
    keys = [i % 6 for i in range(40)]
    assert cluster_bootstrap(d, keys, 3000, seed=11) == cluster_bootstrap(d, keys, 3000, seed=11)


def holm_by_definition(p: list[float]) -> list[float]:
    """Holm (1979): with p sorted ascending, the i-th (from 1) of m is compared with
    alpha / (m - i + 1); the adjusted p-value of the i-th is
    max over j <= i of min(1, (m - j + 1) p_(j))."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    for i in range(m):
        adjusted[order[i]] = max(min(1.0, (m - j) * p[order[j]]) for j in range(i + 1))
    return adjusted


@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=30))
def test_holm_against_its_definition(p):
    assert holm(p) == pytest.approx(holm_by_definition(p))


@given(p=st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30),
       alpha=st.floats(0.001, 0.2))
def test_holm_rejects_what_the_step_down_procedure_rejects(p, alpha):
    """The adjusted values reject exactly the hypotheses Holm's procedure rejects: walk
    the sorted p-values while (m - i + 1) p_(i) <= alpha (p_(i) <= alpha / (m - i + 1),
    written without the division's rounding), stop at the first that is not."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rejected = set()
    for i, k in enumerate(order):
        if (m - i) * p[k] > alpha:
            break
        rejected.add(k)
    adjusted = holm(p)
    assert {i for i in range(m) if adjusted[i] <= alpha} == rejected


def test_holm_leaves_none_out_of_m():
    assert holm([0.01, None, 0.02]) == [0.02, None, 0.02]


@settings(max_examples=30, deadline=None)
@given(effects=st.lists(st.floats(-3, 3, allow_nan=False), min_size=4, max_size=8, unique=True),
       size=st.integers(4, 10), seed=st.integers(0, 2**16))
def test_clustered_bars_are_never_narrower_when_outcomes_correlate_within_a_repository(
        effects, size, seed):
    """Each repository shifts all its pairs by its own effect (spread out: sd 1 once
    standardised), plus a little noise: outcomes correlate within a repository, and the
    clustered interval must be at least as wide as the one that ignores it."""
    e = np.array(effects)
    if e.std() < 1e-6:
        return
    e = (e - e.mean()) / e.std()
    rng = np.random.default_rng(seed)
    d = np.repeat(e, size) + rng.normal(0, 0.1, size=len(e) * size)
    keys = np.repeat(np.arange(len(e)), size).tolist()
    [clustered] = cluster_bootstrap(d[:, None], keys, 4000, seed)
    [plain] = cluster_bootstrap(d[:, None], list(range(len(d))), 4000, seed)
    assert clustered.high - clustered.low >= plain.high - plain.low


def test_clusters_of_one_are_the_plain_paired_bootstrap():
    d = np.random.default_rng(2).normal(size=(25, 2))
    assert cluster_bootstrap(d, [f"repo{i}" for i in range(25)], 3000, seed=4) == \
        cluster_bootstrap(d, list(range(25)), 3000, seed=4)


def test_the_reported_interval_is_never_narrower_than_the_instance_level_one():
    """Two repositories whose means are alike: resampling the two repositories can only
    mix two nearly equal means, an interval far too narrow; the instance-level
    bootstrap sees the spread within them, and the reported interval keeps it."""
    rng = np.random.default_rng(8)
    d = np.concatenate([rng.normal(1.0, 3.0, 20), rng.normal(1.1, 3.0, 20)])[:, None]
    keys = ["X"] * 20 + ["Y"] * 20
    [clustered] = cluster_bootstrap(d, keys, 4000, 1)
    [plain] = cluster_bootstrap(d, list(range(40)), 4000, 1)
    [reported] = paired_estimates(d, keys, 4000, 1)
    assert clustered.high - clustered.low < 0.5 * (plain.high - plain.low)
    assert (reported.low, reported.high) == (min(clustered.low, plain.low),
                                             max(clustered.high, plain.high))
    assert reported.p == max(clustered.p, plain.p) and reported.mean == clustered.mean


def test_one_repository_reports_the_instance_level_interval():
    d = np.array([[1.0], [2.0], [4.0], [3.0]])
    [est] = paired_estimates(d, ["X"] * 4, 2000, 0)
    [plain] = cluster_bootstrap(d, [0, 1, 2, 3], 2000, 0)
    assert (est.low, est.high, est.p) == (plain.low, plain.high, plain.p)
    assert (est.pairs, est.clusters) == (4, 1)
