"""AUROC, its clustered interval, shares, ratios and quantile bins (``report.outcome_stats``),
checked by hand and against references written here from their definitions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from streameval.report.inference import bm_df
from streameval.report.outcome_stats import (
    auroc,
    auroc_interval,
    quantile_bins,
    ratio_interval,
    share_interval,
)


def test_auroc_by_hand():
    """Failed runs score 3, 2, 2; resolved ones 1, 2. Of the 6 (failed, resolved) pairs
    the failed run is above in 3>1, 3>2, 2>1, 2>1 and tied in 2=2 twice: 5/6."""
    scores = [3, 2, 2, 1, 2]
    failed = [True, True, True, False, False]
    a, place = auroc(scores, failed)
    assert a == pytest.approx(5 / 6)
    # placements: a failed run's share of resolved runs below it (ties half); a resolved
    # run's share of failed runs above it
    # 3 is above both; 2 is above 1 and ties 2; 1 is below all three failed; 2 is below 3
    # and ties two
    assert place == pytest.approx([1.0, 0.75, 0.75, 1.0, (1 + 0.5 + 0.5) / 3])


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
@settings(max_examples=200, deadline=None)
def test_auroc_is_the_share_of_pairs_a_failed_run_wins(rows):
    scores = [s for s, _f in rows]
    failed = [f for _s, f in rows]
    got = auroc(scores, failed)
    fail = [s for s, f in rows if f]
    ok = [s for s, f in rows if not f]
    if not fail or not ok:
        assert got is None
        return
    pairs = [(x > y) + 0.5 * (x == y) for x in fail for y in ok]
    assert got[0] == pytest.approx(sum(pairs) / len(pairs))
    # each kind's placements average to the AUROC
    assert sum(p for p, f in zip(got[1], failed) if f) / len(fail) == pytest.approx(got[0])
    assert sum(p for p, f in zip(got[1], failed) if not f) / len(ok) == pytest.approx(got[0])


def test_auroc_interval_is_obuchowskis_clustered_variance_with_cr2():
    """The reference, from its definition: with ψ the influence of each run (a failed
    run's placement less A, over the failed runs; a resolved run's, over the resolved
    ones) and z_k its sum over repository k of C, var(A) = Σ_k z_k² / (1 - n_k/N) and the
    interval is A ± t(Bell-McCaffrey df) · sd."""
    scores = [5, 3, 4, 1, 2, 2, 6, 1, 3, 0, 4, 2, 5, 1, 3, 2, 2, 0, 1, 4]
    failed = [True, False, True, False, False, True, True, False, True, False,
              False, True, True, False, False, False, True, False, False, True]
    repos = ["a"] * 5 + ["b"] * 4 + ["c"] * 6 + ["d"] * 5
    a, place = auroc(scores, failed)
    m = sum(failed)
    n = len(failed) - m
    psi = [(p - a) / (m if f else n) for p, f in zip(place, failed)]
    names = sorted(set(repos))
    z = {k: sum(x for x, r in zip(psi, repos) if r == k) for k in names}
    size = {k: repos.count(k) for k in names}
    var = sum(z[k] ** 2 / (1 - size[k] / len(repos)) for k in names)
    import numpy as np

    q = stats.t.ppf(0.975, bm_df(np.array([size[k] for k in names], dtype=float)))
    iv = auroc_interval(scores, failed, repos)
    assert iv.estimate == pytest.approx(a)
    assert (iv.low, iv.high) == pytest.approx((a - q * math.sqrt(var), min(1.0, a + q * math.sqrt(var))))
    assert (iv.unit, iv.units, iv.runs) == ("repository", 4, 20)
    assert "4 repositories (fewer than 10)" in iv.reasons


def test_auroc_interval_says_why_it_cannot_be_trusted():
    iv = auroc_interval([1, 2, 3, 4], [True, False, True, False], ["a", "a", "b", "b"])
    assert "fewer than 10 failed runs (2)" in iv.reasons
    assert "fewer than 10 resolved runs (2)" in iv.reasons
    # two repositories: an instance-level interval, labelled
    assert iv.unit == "instance"
    assert any("instance-level" in r for r in iv.reasons)
    assert auroc_interval([1, 2], [True, True], ["a", "b"]).reasons == ("no resolved run",)


def test_an_instance_level_share_asked_for_is_not_trusted():
    """``outcomes --unit instance``: 12 repositories of 10 runs, the solve rate's interval
    over runs as independent speaks for these repositories' tasks, and says so."""
    flags = [i % 3 == 0 for i in range(120)]
    repos = [f"r{i % 12}" for i in range(120)]
    assert share_interval(flags, repos).reasons == ()
    iv = share_interval(flags, repos, unit="instance")
    assert iv.unit == "instance" and iv.units == 120
    assert iv.reasons == ("instance-level, as asked: it speaks for these repositories' "
                          "tasks, not for others",)


def test_share_interval_flags_a_repository_holding_most_runs():
    flags = [True] * 30 + [False] * 10 + [True, False] * 10
    repos = ["big"] * 40 + [f"r{i}" for i in range(20)]
    iv = share_interval(flags, repos)
    assert iv.estimate == pytest.approx(40 / 60)
    assert "one repository (big) holds 67% of the runs" in iv.reasons
    assert 0 <= iv.low < iv.estimate < iv.high <= 1


def test_runs_without_a_repository_are_said_as_compare_says_them():
    """12 repositories and 6 runs naming none: each of the 6 is a unit of its own, which
    the interval must say (compare's rows do; outcome_stats restated the repository rules
    and left this one out)."""
    flags = [i % 3 == 0 for i in range(66)]
    repos = [f"o/r{i % 12}" for i in range(60)] + [None] * 6
    iv = share_interval(flags, repos)
    assert iv.unit == "repository" and iv.units == 18
    assert "6 runs name no repository (each counted as one)" in iv.reasons
    assert iv.reasons == ("6 runs name no repository (each counted as one)",)


def test_ratio_interval_is_the_ratio_of_sums():
    """Σx/Σy = 30/150 = 0.2, whatever the runs' own ratios; a repository whose runs all
    save in that ratio adds nothing to the spread, and when all do there is none."""
    x = [1, 2, 0, 3, 4, 0, 2, 1, 5, 0, 3, 1, 2, 0, 6]
    y = [10, 10, 5, 5, 10, 20, 10, 5, 10, 5, 15, 10, 10, 20, 5]
    assert (sum(x), sum(y)) == (30, 150)
    iv = ratio_interval(x, y, list("aaabbbcccdddeee"))
    assert iv.estimate == pytest.approx(0.2)
    assert iv.low < 0.2 < iv.high
    same = ratio_interval([1, 2, 3, 4], [5, 10, 15, 20], list("abcd"))
    assert same.estimate == pytest.approx(0.2) and same.low is None
    assert any("no spread" in r for r in same.reasons)


def test_a_saved_share_interval_keeps_its_width_when_the_linear_one_passes_both_bounds():
    """Three repositories of four runs spending 10 each; the stops save all of it in one,
    half in another, none in the third: R = 60/120 = 0.5. The linearisation's values are
    1, 0.5 and 0 by repository, se = sqrt(1/12), 2 degrees of freedom: its half-width
    t·se = 1.24 reaches past 0 and past 1. Cut to [0, 1] first, its width was read as
    0.5 and the logit interval came out [0.12, 0.88], too narrow; it is logit(0.5) ±
    1.24 / 0.25."""
    x = [10] * 4 + [5] * 4 + [0] * 4
    y = [10] * 12
    iv = ratio_interval(x, y, list("aaaabbbbcccc"))
    half = stats.t.ppf(0.975, 2) * math.sqrt(1 / 12)
    assert half > 0.5
    assert math.log(iv.high / (1 - iv.high)) == pytest.approx(half / 0.25)
    assert math.log(iv.low / (1 - iv.low)) == pytest.approx(-half / 0.25)


def test_quantile_bins_by_hand():
    """8 values, 4 bins: edges at ranks 2, 4, 6 (values 2, 4, 6)."""
    values = [8, 1, 2, 3, 4, 5, 6, 7]
    resolved = [False, True, True, True, False, True, False, False]
    bins = quantile_bins(values, resolved, ["a"] * 8, bins=4)
    assert [(b.above, b.upto, b.low_value, b.high_value) for b in bins] == [
        (None, 2, 1, 2), (2, 4, 3, 4), (4, 6, 5, 6), (6, None, 7, 8)]
    assert [(b.rate.runs, b.resolved) for b in bins] == [(2, 2), (2, 1), (2, 1), (2, 0)]
    assert [b.rate.estimate for b in bins] == [1.0, 0.5, 0.5, 0.0]


def test_quantile_bins_keep_ties_together():
    """Six 0s and a 1 and a 5: every edge is 0, so two bins: 0, and above 0."""
    bins = quantile_bins([0, 0, 0, 0, 0, 0, 1, 5], [True] * 6 + [False, False], ["a"] * 8)
    assert [(b.above, b.upto, b.rate.runs, b.resolved) for b in bins] == [
        (None, 0, 6, 6), (0, None, 2, 0)]
    # one value everywhere: one bin
    assert len(quantile_bins([3, 3, 3], [True, False, True], ["a"] * 3)) == 1
    # "not yet" (infinite) values are a bin of their own at the top
    top = quantile_bins([1, 2, 3, math.inf, math.inf, math.inf], [True] * 6, ["a"] * 6, 2)
    assert [(b.low_value, b.high_value) for b in top] == [(1, 3), (math.inf, math.inf)]


def test_not_yet_is_a_bin_of_its_own_when_the_top_quantile_mixes_it_with_values():
    """Five first-gold steps and three runs that had read no gold ("not yet", inf), 4
    bins: the quantile edges are 2, 4 and inf, so the top bin held 5 and the three not
    yet together ("5 to not yet"), though docs/outcomes.md §5 makes not yet a bin of its
    own. The largest value read is now an edge."""
    inf = math.inf
    bins = quantile_bins([1, 2, 3, 4, 5, inf, inf, inf], [True] * 8, ["a"] * 8, 4)
    assert [(b.low_value, b.high_value) for b in bins] == [
        (1, 2), (3, 4), (5, 5), (inf, inf)]
    assert bins[-1].rate.runs == 3
    assert len(quantile_bins([inf, inf], [True, False], ["a", "b"])) == 1


def test_a_share_with_no_spread_has_the_exact_bound():
    """None of 64 resolved runs stopped: the exact 95% bound is 1 - 0.025^(1/64) = 5.6%
    (the rule of three's 3/64 = 4.7%, a little wider), runs taken as independent."""
    iv = share_interval([False] * 64, ["a"] * 32 + ["b"] * 32)
    assert (iv.estimate, iv.low) == (0.0, 0.0)
    assert iv.high == pytest.approx(1 - 0.025 ** (1 / 64)) and round(iv.high, 3) == 0.056
    assert iv.unit == "instance" and "none of 64" in iv.reasons[0]
    assert share_interval([True] * 5, list("abcde")).low == pytest.approx(0.025 ** (1 / 5))


def test_a_saved_share_interval_is_made_on_the_logit_scale():
    """Its ends are logit(R) ± h / (R (1-R)), h the half-width on the share's scale: in
    (0, 1), and longer above R than below (a saving is a sum of a few large stops)."""
    x = [1, 2, 0, 3, 4, 0, 2, 1, 5, 0, 3, 1, 2, 0, 6]
    y = [10, 10, 5, 5, 10, 20, 10, 5, 10, 5, 15, 10, 10, 20, 5]
    iv = ratio_interval(x, y, list("aaabbbcccdddeee"))
    assert 0 < iv.low < 0.2 < iv.high < 1
    assert iv.high - 0.2 > 0.2 - iv.low
    centre = math.log(0.2 / 0.8)
    assert math.log(iv.high / (1 - iv.high)) - centre == pytest.approx(
        centre - math.log(iv.low / (1 - iv.low)))
    assert ratio_interval([0, 0], [5, 5], ["a", "b"]).reasons[-1] == "nothing saved: no interval"
