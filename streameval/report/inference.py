"""The mean of paired differences over few repositories: an interval and a p-value that
keep their promise, and Holm's correction (docs/compare.md, "Statistics").

Instances of one repository are alike (one code base, one test style), so a comparison's
pairs are clustered, and a benchmark has few clusters: SWE-bench Verified has 12
repositories, a team's own benchmark one to five. A bootstrap over so few clusters
gives intervals far too narrow (at 5 repositories of skewed sizes f53415f's covered the
truth 82% of the time). What is done instead was chosen by a calibration study
(benchmarks/bench_calibration.py; its table is in docs/compare.md):

- **the interval** is the mean ± t · se: se is CR2, the cluster-robust standard error of
  Bell and McCaffrey (2002), and t the 97.5% quantile of Student's t with their
  Satterthwaite degrees of freedom. For a mean, with n_j pairs in cluster j of N and
  p_j = n_j / N, both have closed forms: se² = Σ_j R_j² / (1 - p_j) / N², R_j the sum of
  cluster j's residuals; df = 1 / (Σ a_j² - 2 Σ p_j a_j² + (Σ p_j a_j)²), a_j = p_j / (1 - p_j)
  (C - 1 for equal sizes, fewer when one cluster dominates);
- **the p-value** (no difference) is the larger of that t-test's and of a sign-flip
  test's: each cluster's residuals may be flipped in sign under the null, so the
  studentised mean of the data is compared with its value under every one of the 2^C
  flips (C <= 12: exact), or ``flips`` random ones. The larger of two valid p-values is
  valid; the flip test needs only that a cluster's mean difference is as likely to be
  positive as negative, the t-test that it is near normal. Over C clusters the flip
  test cannot go below 2 / 2^C (0.0625 at 5): with 5 repositories or fewer nothing is
  significant at 0.05, and the reason says so; nor can B random flips go below
  1 / (1 + B), nor McNemar's test over d discordant pairs below 2 / 2^d (``Floor``);
- **one pair, one unit**: two clusters at least are needed for an interval. With 2
  repositories or fewer the repository-level interval is not given: the instance-level
  one is (each pair its own unit, labelled ``instance``), which speaks for these
  repositories' tasks only, and so is never trusted (``level_reasons``), asked for or
  not; with 0/1 outcomes its p-value is McNemar's exact test;
- **no spread** (every unit's mean the same): no interval, and the flip test alone;
- **Holm's correction** makes several p-values safe to read together: sorted ascending,
  the i-th of m is multiplied by (m - i + 1), and each adjusted value is at least the
  one before it (and at most 1).

``clustered_mean`` is the public face: values and their cluster labels in; the
estimate, interval, p-values, unit, counts and the reasons not to trust it out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT_FLIPS", "EXACT_UNITS", "FEW_REPOSITORIES", "LEVEL", "MIN_PAIRS",
           "MIN_REPOSITORIES", "Floor", "MeanInference", "bm_df", "cluster_index", "cluster_sums",
           "clustered_mean", "cr2", "flip_pvalues", "holm", "level_of", "level_reasons",
           "mcnemar", "mean_band", "repositories", "repository_reasons"]

#: the interval's coverage
LEVEL = 0.95
#: below this many pairs a row is not to be trusted
MIN_PAIRS = 10
#: below this many repositories a row is not to be trusted (the exact test's floor, few
#: degrees of freedom, and one odd repository moves everything)
MIN_REPOSITORIES = 10
#: with this many repositories or fewer there is no repository-level interval
FEW_REPOSITORIES = 2
#: up to this many units the sign-flip test enumerates all 2^C flips
EXACT_UNITS = 12
DEFAULT_FLIPS = 10_000
#: flips held at once (flips x units)
_BLOCK = 4_000_000
#: a spread below this share of the values' size is none (rounding)
_TINY = 1e-9
#: random flips' variance by the expanded square below this share of Σ w S² is none: the
#: expansion's cancellation leaves a residue of about 1e-16 of it
_ROUNDING = 1e-12


@dataclass(frozen=True, slots=True)
class Floor:
    """The smallest p-values the test behind ``p`` can give, whatever the data: the exact
    flip test's 2/2^C (one-sided 1/2^C), random flips' 1/(1+B), McNemar's 2/2^d over d
    discordant pairs. ``given`` and ``test`` name them for a sentence ("with 5
    repositories" "the exact test")."""

    two_sided: float
    one_sided: float
    given: str
    test: str


@dataclass(frozen=True, slots=True)
class MeanInference:
    """What the data say about a mean: the estimate, its 95% interval and p-values (None
    where there are none), the unit they treat as independent, and why not to trust them.

    ``p`` is two-sided against ``null``; ``p_below`` and ``p_above`` are one-sided (the
    alternative: the mean is below, above ``null``)."""

    estimate: float | None
    low: float | None
    high: float | None
    p: float | None
    p_below: float | None
    p_above: float | None
    #: the t-test's two-sided p, and the flip test's (or McNemar's)
    p_t: float | None
    p_exact: float | None
    df: float | None
    #: "repository" or "instance": what the interval and p-values resample
    unit: str
    #: values used, clusters among them (a value with no repository is one), units
    pairs: int
    clusters: int
    units: int
    unnamed: int
    reasons: tuple[str, ...] = ()
    #: the smallest p the test can give (None without a test)
    floor: Floor | None = None

    @property
    def trusted(self) -> bool:
        return not self.reasons

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) or None

    @property
    def units_text(self) -> str:
        """``12 repositories``, ``1 instance``: the units, counted."""
        return _plural(self.units, self.unit)


# --------------------------------------------------------------------------- formulas


def cluster_index(keys: Sequence[Hashable]) -> tuple[list[int], int]:
    """Each row's cluster as 0..C-1 (in order of first appearance), and C."""
    seen: dict[Hashable, int] = {}
    index = [seen.setdefault(k, len(seen)) for k in keys]
    return index, len(seen)


def cluster_sums(values: np.ndarray, index: Sequence[int], n_clusters: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster, the sum of each column of ``values`` (rows x columns, no NaN), and
    the cluster's rows."""
    import numpy as np

    idx = np.asarray(index, dtype=np.int64)
    sums = np.zeros((n_clusters, values.shape[1]))
    np.add.at(sums, idx, values)
    return sums, np.bincount(idx, minlength=n_clusters).astype(np.float64)


def cr2(sums: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the mean and its CR2 standard error, from the cluster sums (C x K)
    and sizes (C, at least 2)."""
    import numpy as np

    total = sizes.sum()
    mean = sums.sum(axis=0) / total
    resid = sums - sizes[:, None] * mean
    var = (resid ** 2 / (1 - sizes / total)[:, None]).sum(axis=0) / total ** 2
    return mean, np.sqrt(var)


def bm_df(sizes: np.ndarray) -> float:
    """Bell and McCaffrey's degrees of freedom for the CR2 variance of a mean (working
    model: independent pairs of one variance), from the cluster sizes."""
    p = sizes / sizes.sum()
    a = p / (1 - p)
    return float(1 / ((a ** 2).sum() - 2 * (p * a ** 2).sum() + (p * a).sum() ** 2))


def flip_pvalues(sums: np.ndarray, sizes: np.ndarray, null: float = 0.0,
                 flips: int = DEFAULT_FLIPS, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The sign-flip test of "the mean is ``null``", per column: two-sided, below and
    above p-values, and whether every flip was counted (C <= ``EXACT_UNITS``) rather than
    ``flips`` random ones. The statistic is the CR2-studentised mean; a flip multiplies
    each cluster's sum of (value - null) by +1 or -1."""
    import numpy as np

    n_units, columns = len(sizes), sums.shape[1]
    total = sizes.sum()
    shifted = sums - sizes[:, None] * null
    w = 1 / (1 - sizes / total)
    exact = n_units <= EXACT_UNITS
    rng = np.random.default_rng(seed)
    count = 2 ** n_units if exact else flips
    # a spread below this is rounding: the statistic is then infinite (or 0 for a mean of 0)
    tol = _TINY * np.abs(shifted).max(axis=0) + 1e-300

    c0 = (shifted ** 2 * w[:, None]).sum(axis=0)
    weighted = shifted * (sizes * w)[:, None]
    c2 = float((sizes ** 2 * w).sum())

    def stats(v: np.ndarray, direct: bool) -> np.ndarray:
        """flips x K: the studentised mean of each flip. The data and every flip of an
        exact test are computed from their residuals (the expanded square below loses a
        spread-free sample's exact zero to rounding); random flips, many and over many
        units, by two matrix products, a variance within rounding of 0 being 0 (else the
        flips that tie a spread-free sample's infinite statistic, all signs alike, would
        be finite and never count)."""
        num = v @ shifted                                  # N times the mean
        if direct:
            resid = v[:, :, None] * shifted[None] - sizes[None, :, None] * (num / total)[:, None, :]
            var = (resid ** 2 * w[None, :, None]).sum(axis=1)
        else:
            m = num / total
            var = c0 - 2 * m * (v @ weighted) + m ** 2 * c2
            var = np.where(var > _ROUNDING * c0, var, 0.0)
        se = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se > tol, num / np.where(se > tol, se, 1.0),
                            np.where(np.abs(num) > tol, np.sign(num) * np.inf, 0.0))

    observed = stats(np.ones((1, n_units)), True)[0]
    slack = 1e-9 * np.where(np.isfinite(observed), np.abs(observed), 0.0)
    far, below, above = np.zeros(columns), np.zeros(columns), np.zeros(columns)
    step = max(1, _BLOCK // (n_units * columns if exact else max(n_units, columns)))
    for done in range(0, count, step):
        size = min(step, count - done)
        if exact:
            codes = np.arange(done, done + size, dtype=np.int64)[:, None] >> np.arange(n_units)
            v = 1.0 - 2.0 * (codes & 1)
        else:
            v = rng.integers(0, 2, (size, n_units), dtype=np.int8).astype(np.float64) * 2 - 1
        t = stats(v, exact)
        far += (np.abs(t) >= np.abs(observed) - slack).sum(axis=0)
        below += (t <= observed + slack).sum(axis=0)
        above += (t >= observed - slack).sum(axis=0)
    if exact:
        return far / count, below / count, above / count, True
    return (1 + far) / (1 + count), (1 + below) / (1 + count), (1 + above) / (1 + count), False


def mcnemar(diffs: Sequence[float]) -> tuple[float, float, float]:
    """McNemar's exact test on paired 0/1 outcomes, from their differences (-1, 0, +1):
    two-sided, below and above p-values (the binomial tails of the discordant pairs)."""
    down = sum(1 for d in diffs if d < 0)
    up = sum(1 for d in diffs if d > 0)
    n = down + up
    if n == 0:
        return 1.0, 1.0, 1.0

    def tail(k: int) -> float:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n

    below, above = tail(up), tail(down)     # P(up <= seen), P(down <= seen)
    return min(1.0, 2 * min(below, above)), below, above


def _t():
    from scipy import stats

    return stats.t


# --------------------------------------------------------------------------- the public face


def _plural(n: int, word: str) -> str:
    if word.endswith("y"):
        return f"{n} {word[:-1]}{'y' if n == 1 else 'ies'}"
    return f"{n} {word}{'' if n == 1 else 's'}"


def repositories(labels: Sequence[Hashable | None]) -> tuple[list[int], int]:
    """Each value's repository as 0..C-1 and C: a value that names none (None) is a
    repository of its own."""
    return cluster_index([("", i) if c is None else ("r", c) for i, c in enumerate(labels)])


def level_of(labels: Sequence[Hashable | None], unit: str = "repository") -> str:
    """The level an inference over values so labelled is made at: ``unit``, but
    ``instance`` when no value names its repository or there are 2 repositories or fewer
    (no repository-level interval)."""
    if unit not in ("repository", "instance"):
        raise ValueError(f"unit must be repository or instance, got {unit!r}")
    if unit == "instance" or all(c is None for c in labels):
        return "instance"
    return "instance" if repositories(labels)[1] <= FEW_REPOSITORIES else "repository"


def repository_reasons(labels: Sequence[Hashable | None], noun: str = "pair") -> list[str]:
    """Why an inference made over repositories is not to be trusted, each value a
    ``noun``: values that name no repository (each one of its own), fewer than
    ``MIN_REPOSITORIES`` repositories, one repository holding more than half."""
    import numpy as np

    index, n_clusters = repositories(labels)
    unnamed = sum(1 for c in labels if c is None)
    out = []
    if unnamed:
        out.append(f"{_plural(unnamed, noun)} name no repository (each counted as one)")
    if n_clusters < MIN_REPOSITORIES:
        out.append(f"{n_clusters} repositories (fewer than {MIN_REPOSITORIES})")
    sizes = np.bincount(index)
    top = int(sizes.argmax())
    if sizes[top] > len(labels) / 2:
        name = next(lab for lab, i in zip(labels, index) if i == top)
        out.append(f"one repository ({name}) holds {sizes[top] / len(labels):.0%} of the "
                   f"{noun}s")
    return out


def level_reasons(labels: Sequence[Hashable | None], unit: str = "repository",
                  noun: str = "pair") -> tuple[str, list[str]]:
    """The level an inference over values so labelled is made at (``level_of``), and the
    reasons not to trust it that the level gives, each value a ``noun``. An
    instance-level inference, asked for or not, speaks for these repositories' tasks,
    not for others: it is never trusted, and says why. At the repository level, the
    reasons are ``repository_reasons``."""
    level = level_of(labels, unit)
    if level == "repository":
        return level, repository_reasons(labels, noun)
    if unit == "instance":
        why = ("instance-level, as asked: it speaks for these repositories' tasks, not for "
               "others")
    elif all(c is None for c in labels):
        why = f"no {noun} names its repository: each is taken as independent"
    else:
        why = (f"{_plural(repositories(labels)[1], 'repository')}: no repository-level "
               "interval; this one is instance-level and speaks for these repositories' "
               "tasks, not for others")
    return level, [why]


def _units(labels: list[Hashable | None], unit: str, reasons: list[str]
           ) -> tuple[str, list[int], int, int]:
    """The level the inference is made at, each value's unit (0..U-1), U, and the
    clusters at the repository level (a value with no repository is one); the reasons
    the level gives are appended."""
    pairs = len(labels)
    index, n_clusters = repositories(labels)
    level, why = level_reasons(labels, unit)
    reasons.extend(why)
    if level == "instance":
        return level, list(range(pairs)), pairs, n_clusters
    return level, index, n_clusters, n_clusters


def clustered_mean(values: Sequence[float], clusters: Sequence[Hashable | None], *,
                   unit: str = "repository", null: float = 0.0, binary: bool = False,
                   bounds: tuple[float, float] | None = None, flips: int = DEFAULT_FLIPS,
                   seed: int = 0) -> MeanInference:
    """Inference for the mean of ``values`` (NaN: left out) whose rows are clustered by
    ``clusters`` (a repository per value; None: the value names none and is a cluster
    of its own, and the reasons say how many do).

    ``unit="repository"`` treats clusters as the independent units, down to 3 of them;
    with 2 or fewer, or none named, the instance-level inference is given instead and
    labelled ``instance``. ``unit="instance"`` asks for it. ``binary``: the values are
    differences of 0/1 outcomes (McNemar's exact test at the instance level, when every
    one is -1, 0 or 1: repeated runs that disagree make a fraction).
    ``bounds``: where the mean can be (a difference of shares: -1 to 1); the interval
    is cut to them, which only removes values the truth cannot take."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    v = v[keep]
    labels = [c for c, k in zip(clusters, keep.tolist()) if k]
    pairs = len(v)
    if pairs == 0:
        return MeanInference(None, None, None, None, None, None, None, None, None, unit,
                             0, 0, 0, 0, ("no pairs",))
    reasons = [f"fewer than {MIN_PAIRS} pairs ({pairs})"] if pairs < MIN_PAIRS else []
    level, index, n_units, n_clusters = _units(labels, unit, reasons)
    base = dict(unit=level, pairs=pairs, clusters=n_clusters, units=n_units,
                unnamed=sum(1 for c in labels if c is None))
    mean = float(v.mean())
    if n_units < 2:
        reasons.append("one unit: no interval and no p-value")
        return MeanInference(mean, None, None, None, None, None, None, None, None,
                             reasons=tuple(reasons), **base)
    sums, sizes = cluster_sums(v[:, None], index, n_units)
    se = float(cr2(sums, sizes)[1][0])
    df = bm_df(sizes)
    two, below, above, exact = flip_pvalues(sums, sizes, null, flips, seed)
    ps = (float(two[0]), float(below[0]), float(above[0]))
    p_exact = ps[0] if exact else None
    exact_mcnemar = None
    if binary and level == "instance" and null == 0 and np.isin(v, (-1.0, 0.0, 1.0)).all():
        exact_mcnemar = mcnemar(v.tolist())
        floor = _mcnemar_floor(int(np.count_nonzero(v)))
    elif exact:
        floor = Floor(2 / 2 ** n_units, 1 / 2 ** n_units, f"with {_plural(n_units, level)}",
                      "the exact test")
    else:
        floor = Floor(1 / (1 + flips), 1 / (1 + flips),
                      f"with {_plural(flips, 'random sign flip')}", "the flip test")
    if floor.two_sided > 1 - LEVEL:
        reasons.append(f"{floor.given} {floor.test} cannot go below p = {floor.two_sided:.4g}")
    low = high = p_t = None
    if se <= _TINY * (1 + float(np.abs(v).max())):
        reasons.append(f"no spread between the {level} means: no interval")
    else:
        t = _t()
        q = float(t.ppf((1 + LEVEL) / 2, df))
        low, high = mean - q * se, mean + q * se
        if bounds is not None:
            low, high = max(low, bounds[0]), min(high, bounds[1])
        z = (mean - null) / se
        p_t = float(2 * t.sf(abs(z), df))
        ps = tuple(max(a, b) for a, b in zip((p_t, float(t.cdf(z, df)), float(t.sf(z, df))), ps))
    if exact_mcnemar is not None:
        ps = exact_mcnemar
        p_exact = ps[0]
    return MeanInference(mean, low, high, min(1.0, ps[0]), min(1.0, ps[1]), min(1.0, ps[2]),
                         p_t, p_exact, df, reasons=tuple(reasons), floor=floor, **base)


def _mcnemar_floor(discordant: int) -> Floor:
    one = 1 / 2 ** discordant
    return Floor(min(1.0, 2 * one), one, f"with {_plural(discordant, 'discordant pair')}",
                 "McNemar's test")


def mean_band(matrix: np.ndarray, clusters: Sequence[Hashable | None], unit: str = "repository"
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Per column of ``matrix`` (rows x columns, no NaN: a curve's steps), the mean and
    its 95% CR2 band, and the unit (instance-level with 2 repositories or fewer, as
    ``clustered_mean``)."""
    unit = level_of(clusters, unit)
    if unit == "instance":
        index, n_units = list(range(len(clusters))), len(clusters)
    else:
        index, n_units = repositories(clusters)
    if n_units < 2:
        mean = matrix.mean(axis=0)
        return mean, mean, mean, unit
    sums, sizes = cluster_sums(matrix, index, n_units)
    mean, se = cr2(sums, sizes)
    q = float(_t().ppf((1 + LEVEL) / 2, bm_df(sizes)))
    return mean, mean - q * se, mean + q * se, unit


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
