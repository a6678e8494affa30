"""Small-sample inference for a mean over clusters, against direct computations.

- CR2 and Bell-McCaffrey's degrees of freedom against their matrix definitions (the
  hat matrix, the adjustment (I - H_jj)^(-1/2), Satterthwaite's ratio), written here;
- the sign-flip test against a loop over every flip, and its random version against
  the exact one;
- McNemar's exact test against the binomial tails counted by hand;
- the edge cases the old bootstrap got wrong (issue 29), each named for its failure;
- calibration: at 5 repositories of skewed sizes, the false-positive rate over 240
  simulated comparisons with no difference (benchmarks/bench_calibration.py has the
  full study);
- Holm's correction against its definition.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.report.inference import (
    bm_df,
    cluster_sums,
    clustered_mean,
    cr2,
    flip_pvalues,
    holm,
    mcnemar,
    mean_band,
)

sizes_st = st.lists(st.integers(1, 9), min_size=2, max_size=6)


def matrices(sizes: list[int]):
    """The hat matrix's complement M, and G whose column j is the CR2 weight vector of
    cluster j: (I - H_jj)^(-1/2) 1 / N on cluster j's rows."""
    n = sum(sizes)
    idx = np.repeat(np.arange(len(sizes)), sizes)
    h = np.full((n, n), 1 / n)
    g = np.zeros((n, len(sizes)))
    for j in range(len(sizes)):
        rows = idx == j
        vals, vecs = np.linalg.eigh(np.eye(rows.sum()) - h[np.ix_(rows, rows)])
        g[rows, j] = vecs @ np.diag(vals ** -0.5) @ vecs.T @ np.ones(rows.sum()) / n
    return np.eye(n) - h, g, idx


@settings(max_examples=40, deadline=None)
@given(sizes=sizes_st, seed=st.integers(0, 2 ** 16))
def test_cr2_and_bm_df_against_their_matrix_definitions(sizes, seed):
    if len(sizes) == 1 or max(sizes) == sum(sizes):
        return
    m, g, idx = matrices(sizes)
    d = np.random.default_rng(seed).normal(size=len(idx))
    resid = m @ d
    se_def = math.sqrt(sum((g[:, j] @ resid) ** 2 for j in range(len(sizes))))
    b = g.T @ m @ g
    df_def = np.trace(b) ** 2 / np.trace(b @ b)
    sums, n = cluster_sums(d[:, None], idx, len(sizes))
    mean, se = cr2(sums, n)
    assert mean[0] == pytest.approx(d.mean())
    assert se[0] == pytest.approx(se_def, rel=1e-9)
    assert bm_df(n) == pytest.approx(df_def, rel=1e-9)


def test_bm_df_is_c_minus_1_for_equal_sizes_and_fewer_when_one_dominates():
    assert bm_df(np.full(12, 40.0)) == pytest.approx(11)
    assert bm_df(np.array([300.0, 40, 40, 40, 40])) < 2.5


def flips_by_loop(d: np.ndarray, idx: np.ndarray, null: float):
    """Every sign flip of the clusters' (d - null), the CR2 t statistic of each, and
    the share as extreme as the data's: two-sided, below and above."""
    c = idx.max() + 1
    stats = []
    for signs in itertools.product((1.0, -1.0), repeat=c):
        x = (d - null) * np.array(signs)[idx]
        sums, n = cluster_sums(x[:, None], idx, c)
        mean, se = cr2(sums, n)
        stats.append(mean[0] / se[0])
    t = np.array(stats)
    obs = t[0]
    eps = 1e-9 * abs(obs)
    return (np.mean(np.abs(t) >= abs(obs) - eps), np.mean(t <= obs + eps),
            np.mean(t >= obs - eps))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=7), seed=st.integers(0, 2 ** 16),
       null=st.sampled_from([0.0, 0.3, -0.2]))
def test_sign_flips_against_a_loop_over_every_flip(sizes, seed, null):
    idx = np.repeat(np.arange(len(sizes)), sizes)
    if max(sizes) == sum(sizes):
        return
    d = np.random.default_rng(seed).normal(0.2, 1, size=len(idx))
    sums, n = cluster_sums(d[:, None], idx, len(sizes))
    two, below, above, exact = flip_pvalues(sums, n, null)
    assert exact
    assert (two[0], below[0], above[0]) == pytest.approx(flips_by_loop(d, idx, null))


def test_random_flips_agree_with_every_flip_within_monte_carlo_error():
    """14 clusters: 16,384 flips counted by the loop; 20,000 random ones estimate the
    same p-value within 4 standard errors."""
    rng = np.random.default_rng(4)
    idx = np.repeat(np.arange(14), rng.integers(2, 6, 14))
    d = rng.normal(0.15, 1, size=len(idx))
    sums, n = cluster_sums(d[:, None], idx, 14)
    exact_two, _, _ = flips_by_loop(d, idx, 0.0)
    two, _, _, exact = flip_pvalues(sums, n, flips=20_000, seed=1)
    assert not exact
    assert abs(two[0] - exact_two) < 4 * math.sqrt(exact_two * (1 - exact_two) / 20_000)


def test_random_flips_count_the_flips_that_tie_a_spread_free_sample():
    """14 repositories whose pairs all differ by 0.1: the data's statistic is infinite,
    and so is that of the all-plus and all-minus flips, 2 of the 16,384; 200,000 random
    flips meet about 24 of them. The random flips' variance, computed by expanding the
    square, kept a rounding residue for those flips here (0.01 or 0.3 happened not to),
    so none of them tied the data and p fell to 1 / (1 + flips)."""
    sizes = np.arange(2, 16)
    idx = np.repeat(np.arange(14), sizes)
    sums, n = cluster_sums(np.full((len(idx), 1), 0.1), idx, 14)
    two, below, above, exact = flip_pvalues(sums, n, flips=200_000, seed=3)
    assert not exact
    for got, truth in ((two[0], 2 / 2 ** 14), (above[0], 1 / 2 ** 14)):
        assert abs(got - truth) < 4 * math.sqrt(truth / 200_000)
    assert below[0] == 1.0


def test_too_few_random_flips_say_that_nothing_can_be_significant():
    """20 repositories, every pair 0.2 below with some noise; ``--resamples 10``: the
    random flip test cannot go below 1/11, so no row can be significant, and the row
    says why (as it does for the exact test's floor over 5 repositories or fewer)."""
    rng = np.random.default_rng(7)
    labels = [f"o/r{i % 20}" for i in range(200)]
    inf = clustered_mean(-0.2 + rng.normal(0, 0.05, 200), labels, flips=10)
    assert inf.p_t < 1e-6 and inf.p >= 1 / 11
    assert "with 10 random sign flips the flip test cannot go below p = 0.09091" in inf.reason
    assert inf.floor is not None and inf.floor.one_sided == pytest.approx(1 / 11)
    many = clustered_mean(-0.2 + rng.normal(0, 0.05, 200), labels)
    assert many.trusted


def test_mcnemar_over_few_discordant_pairs_says_its_floor():
    """40 instances of one repository, 3 solved by B alone: McNemar's exact test cannot
    go below 2/8 = 0.25 however many instances tie."""
    inf = clustered_mean([1.0] * 3 + [0.0] * 37, ["o/one"] * 40, binary=True)
    assert inf.p == pytest.approx(0.25)
    assert "with 3 discordant pairs McNemar's test cannot go below p = 0.25" in inf.reason
    assert inf.floor.one_sided == pytest.approx(1 / 8)


def test_mcnemar_by_hand():
    # 7 pairs B solved and A did not, 1 the other way, 4 ties:
    # P(X >= 7 | 8, 1/2) = (8 + 1) / 256, two-sided 18 / 256
    d = [1.0] * 7 + [-1.0] + [0.0] * 4
    two, below, above = mcnemar(d)
    assert two == pytest.approx(18 / 256)
    assert above == pytest.approx(9 / 256) and below == pytest.approx(1 - 1 / 256)
    assert mcnemar([0.0, 0.0]) == (1.0, 1.0, 1.0)


# --------------------------------------------------------------------------- issue 29's cases


def test_three_identical_differences_are_not_a_certainty():
    """f53415f gave [+0.010, +0.010] and p < 0.001: three pairs cannot say that. The
    exact flip test over 3 units cannot go below 2/8; there is no spread to make an
    interval from."""
    inf = clustered_mean([0.01, 0.01, 0.01], [None, None, None])
    assert inf.estimate == pytest.approx(0.01)
    assert inf.low is None and inf.high is None
    assert inf.p == pytest.approx(0.25) and inf.unit == "instance"
    assert not inf.trusted and "fewer than 10 pairs (3)" in inf.reason


def test_five_repositories_with_positive_means_cannot_go_below_the_flip_floor():
    """Five repositories whose means are all positive: f53415f gave p = 0.0006; the
    exact test over 5 repositories cannot go below 2/32 = 0.0625."""
    rng = np.random.default_rng(3)
    values, labels = [], []
    for j, n in enumerate((120, 60, 45, 40, 40)):
        values += list(0.05 + 0.01 * j + rng.normal(0, 0.02, n))
        labels += [f"o/r{j}"] * n
    inf = clustered_mean(values, labels)
    assert inf.p_t is not None and inf.p_t < 0.01
    assert inf.p == pytest.approx(0.0625) and inf.p_exact == pytest.approx(0.0625)
    assert inf.unit == "repository" and inf.units == 5
    assert "the exact test cannot go below p = 0.0625" in inf.reason


def test_one_repository_of_thirty_pairs_is_instance_level_and_untrusted():
    rng = np.random.default_rng(1)
    inf = clustered_mean(0.1 + rng.normal(0, 0.05, 30), ["django/django"] * 30)
    assert inf.unit == "instance" and inf.units == 30 and inf.clusters == 1
    assert inf.low is not None and inf.p < 0.001
    assert not inf.trusted and "1 repository: no repository-level interval" in inf.reason


def test_values_without_a_repository_are_counted_and_said():
    labels = [f"o/r{i % 12}" for i in range(40)] + [None] * 3
    inf = clustered_mean(np.random.default_rng(2).normal(size=43), labels)
    assert (inf.unit, inf.clusters, inf.unnamed) == ("repository", 15, 3)
    assert "3 pairs name no repository" in inf.reason
    none = clustered_mean(np.random.default_rng(2).normal(size=20), [None] * 20)
    assert none.unit == "instance" and "no pair names its repository" in none.reason


def test_a_repository_holding_more_than_half_the_pairs_is_said():
    labels = ["big/one"] * 60 + [f"o/r{i % 11}" for i in range(44)]
    inf = clustered_mean(np.random.default_rng(5).normal(size=104), labels)
    assert inf.reasons == ("one repository (big/one) holds 58% of the pairs",)


def test_twelve_balanced_repositories_are_trusted():
    labels = [f"o/r{i % 12}" for i in range(240)]
    inf = clustered_mean(np.random.default_rng(6).normal(size=240), labels)
    assert inf.trusted and inf.reason is None and inf.df == pytest.approx(11)


def test_an_instance_level_inference_asked_for_is_never_trusted():
    """Twelve balanced repositories are trusted at the repository level; asked for
    instances (``--unit instance``), the same values speak for these repositories' tasks
    only, and the row says so instead of passing for trusted (as it did)."""
    labels = [f"o/r{i % 12}" for i in range(240)]
    inf = clustered_mean(np.random.default_rng(6).normal(size=240), labels, unit="instance")
    assert (inf.unit, inf.units, inf.clusters) == ("instance", 240, 12)
    assert not inf.trusted
    assert inf.reasons == ("instance-level, as asked: it speaks for these repositories' "
                           "tasks, not for others",)


def test_nan_values_are_left_out_with_their_labels():
    inf = clustered_mean([1.0, float("nan"), 3.0, float("inf")] * 3, ["a", "b", "c", "d"] * 3)
    assert inf.pairs == 6 and inf.clusters == 2 and inf.estimate == pytest.approx(2.0)


def test_no_pairs_and_no_difference():
    empty = clustered_mean([], [])
    assert empty.estimate is None and empty.pairs == 0 and not empty.trusted
    zero = clustered_mean(np.zeros(36), [f"r{i % 12}" for i in range(36)])
    assert (zero.estimate, zero.low, zero.p) == (0.0, None, 1.0)


def test_binary_outcomes_at_the_instance_level_take_mcnemar():
    d = [1.0] * 7 + [-1.0] + [0.0] * 22
    inf = clustered_mean(d, ["one/repo"] * 30, binary=True)
    assert inf.unit == "instance" and inf.p == pytest.approx(18 / 256)
    assert inf.p_exact == pytest.approx(18 / 256)


def test_one_sided_p_values_against_a_shifted_null():
    rng = np.random.default_rng(8)
    labels = [f"r{i % 15}" for i in range(300)]
    d = -0.1 + rng.normal(0, 0.2, 300) + np.repeat(rng.normal(0, 0.02, 15), 20)
    worse = clustered_mean(d, labels, null=-0.02)
    assert worse.p_below < 0.01 and worse.p_above > 0.99
    assert clustered_mean(d, labels, null=-0.3).p_below > 0.99


def test_mean_band_is_the_interval_of_each_column():
    rng = np.random.default_rng(9)
    labels = [f"r{i % 6}" for i in range(48)]
    m = rng.normal(size=(48, 3))
    mean, low, high, unit = mean_band(m, labels)
    assert unit == "repository"
    for j in range(3):
        inf = clustered_mean(m[:, j], labels)
        assert (mean[j], low[j], high[j]) == pytest.approx((inf.estimate, inf.low, inf.high))
    assert mean_band(m, ["a", "b"] * 24)[3] == "instance"


# --------------------------------------------------------------------------- calibration


def test_false_positives_at_five_skewed_repositories_stay_near_nominal():
    """240 comparisons with no difference: 5 repositories of 300, 181, 110, 66 and 40
    pairs, a repository part of 20% of the variance (the study's setting). f53415f said
    p < 0.05 in 18% of them; the rule allows 8%."""
    rng = np.random.default_rng(2029)
    sizes = (300, 181, 110, 66, 40)
    labels = [f"o/r{j}" for j, n in enumerate(sizes) for _ in range(n)]
    idx = np.repeat(np.arange(5), sizes)
    hits = covered = 0
    for _ in range(240):
        d = rng.normal(0, 0.25 * math.sqrt(0.2), 5)[idx] + rng.normal(0, 0.25 * math.sqrt(0.8),
                                                                        len(idx))
        inf = clustered_mean(d, labels)
        hits += inf.p < 0.05
        covered += inf.low <= 0 <= inf.high
    assert hits / 240 <= 0.08
    assert covered / 240 >= 0.9


# --------------------------------------------------------------------------- Holm


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


def test_the_interval_is_cut_to_where_the_mean_can_be():
    """Four differences of a reciprocal rank: CR2 with 3 degrees of freedom reaches past
    +1, which no difference of shares can."""
    d = [0.98, 0.5, 0.0, 0.5]
    wide = clustered_mean(d, [None] * 4)
    cut = clustered_mean(d, [None] * 4, bounds=(-1.0, 1.0))
    assert wide.high > 1 and cut.high == 1.0 and cut.low == wide.low
