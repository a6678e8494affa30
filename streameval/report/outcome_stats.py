"""The statistics of ``streameval outcomes`` and ``abort-backtest --tune``: a share with
its interval, the AUROC of a signal for failure with its interval, quantile bins
(docs/outcomes.md §5-§6 states each rule; this module is where they live).

Runs of one repository are alike, so every interval treats repositories as the
independent units, with the small-sample method ``compare`` uses
(``report.inference.clustered_mean``: CR2 standard error, Bell-McCaffrey degrees of
freedom, Student's t; instance-level, and labelled so, with 2 repositories or fewer):

- **a share** (a solve rate, a share of runs stopped) is the mean of 0/1 values;
- **a ratio of sums** (tokens saved / tokens spent) is the mean of its linearisation
  R + (x_i - R y_i) / ȳ, whose mean is R and whose cluster-robust variance is the
  delta method's; its interval is made on the logit scale (R is skewed);
- **a share with no spread** (none of the resolved runs stopped) has the exact binomial
  interval of 0 in n, runs taken as independent: the upper bound is what matters;
- **AUROC** is the mean of its pseudo-values A + N·ψ_i, ψ_i the run's influence on the
  Mann-Whitney statistic (its placement value: for a failed run, the share of resolved
  runs it scores above, ties half, less A, over the failed runs; for a resolved run the
  same the other way). Their cluster-robust variance is Obuchowski's (1997) variance of
  an AUROC over clustered data, with CR2's small-sample correction in place of C/(C-1).
  ``benchmarks/bench_auroc_coverage.py`` checks its coverage against a repository
  bootstrap's in the regime of a SWE-bench fleet.

Every figure says why it may not support a verdict: fewer than ``MIN_RUNS`` runs, fewer
than ``MIN_RUNS`` failed or resolved runs (AUROC), fewer than ``MIN_REPOSITORIES``
repositories, one repository holding most of the runs, no interval at all.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from streameval.report.inference import clustered_mean, level_reasons

__all__ = ["MIN_RUNS", "Bin", "Interval", "auroc", "auroc_interval", "quantile_bins",
           "ratio_interval", "share_interval"]

#: below this many runs (or failed, or resolved runs, for an AUROC) a figure is flagged
MIN_RUNS = 10
#: random sign flips of clustered_mean's p-value (unused here: only its interval is read)
_FLIPS = 200


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate and its 95% interval (None: none can be given), the unit the interval
    treats as independent and how many there are, and why not to trust it."""

    estimate: float | None
    low: float | None
    high: float | None
    runs: int
    unit: str = "repository"
    units: int = 0
    reasons: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "runs": self.runs, "unit": self.unit, "units": self.units,
                "reasons": list(self.reasons)}


def _mean_interval(values: Sequence[float], clusters: Sequence[Hashable | None],
                   reasons: list[str], unit: str, bounded: bool = True) -> Interval:
    """The clustered 95% interval of a mean (cut to 0..1 when ``bounded``), and the
    reasons not to trust it: ``reasons`` given, then what the repositories allow."""
    inf = clustered_mean(values, clusters, unit=unit, bounds=(0.0, 1.0) if bounded else None,
                         flips=_FLIPS)
    n = len(values)
    reasons.extend(level_reasons(clusters, unit, "run")[1])
    if inf.estimate is not None and inf.low is None:
        reasons.append("no interval: " + ("one unit" if inf.units < 2 else
                                          "no spread between the units"))
    return Interval(inf.estimate, inf.low, inf.high, n, inf.unit, inf.units, tuple(reasons))


def share_interval(flags: Sequence[bool], clusters: Sequence[Hashable | None],
                   unit: str = "repository") -> Interval:
    """The share of true ``flags`` (a solve rate, the share of resolved runs a policy
    stops) and its interval. When every flag is the same (no resolved run stopped) the
    units have no spread to measure: the interval is then the exact (Clopper-Pearson)
    one of 0 or n in n runs taken as independent, labelled so, since "none of 64" still
    bounds the share from above (by 5.6%)."""
    n = len(flags)
    if n == 0:
        return Interval(None, None, None, 0, unit, 0, ("no runs",))
    reasons = [f"fewer than {MIN_RUNS} runs ({n})"] if n < MIN_RUNS else []
    k = sum(1 for f in flags if f)
    if k in (0, n):
        edge = 0.025 ** (1 / n)    # the exact 95% bound of 0 (or n) in n
        low, high = (0.0, 1 - edge) if k == 0 else (edge, 1.0)
        reasons.append(f"{'none' if k == 0 else 'all'} of {n}: the exact binomial interval, "
                       "runs taken as independent")
        return Interval(k / n, low, high, n, "instance", n, tuple(reasons))
    return _mean_interval([float(f) for f in flags], clusters, reasons, unit)


def ratio_interval(x: Sequence[float], y: Sequence[float], clusters: Sequence[Hashable | None],
                   unit: str = "repository") -> Interval:
    """Σx / Σy (a share of the spend saved, 0 <= x <= y) and its interval, by
    linearisation: the mean of R + (x_i - R·y_i) / ȳ is R, and its clustered variance
    the delta method's. The interval is made on the logit scale, logit(R) ± h / (R (1-R))
    with h the linear half-width: a saving is a sum of a few large stops, so R's
    distribution is skewed right, and the symmetric interval fell short of the truth
    more often (bench_auroc_coverage.py, spend as heavy-tailed as real tokens: 91% of
    intervals covered it, 93% on the logit scale)."""
    n = len(x)
    total = sum(y)
    if n == 0 or total <= 0:
        return Interval(None, None, None, n, unit, 0, ("nothing spent",))
    r = sum(x) / total
    mean_y = total / n
    reasons = [f"fewer than {MIN_RUNS} runs ({n})"] if n < MIN_RUNS else []
    if r <= 0.0 or r >= 1.0:
        reasons.append("nothing saved: no interval" if r <= 0 else "all saved: no interval")
        return Interval(r, None, None, n, unit, 0, tuple(reasons))
    # uncut: its half-width is what goes to the logit scale, even where it passes 0 or 1
    linear = _mean_interval([r + (xi - r * yi) / mean_y for xi, yi in zip(x, y)], clusters,
                            reasons, unit, bounded=False)
    if linear.low is None or linear.high is None:
        return linear
    half = (linear.high - linear.low) / 2
    centre, spread = math.log(r / (1 - r)), half / (r * (1 - r))
    return Interval(r, 1 / (1 + math.exp(-(centre - spread))),
                    1 / (1 + math.exp(-(centre + spread))), n, linear.unit, linear.units,
                    linear.reasons)


# --------------------------------------------------------------------------- AUROC


def _midranks(values: Sequence[float]) -> list[float]:
    """Each value's rank among ``values`` (1-based), ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def auroc(scores: Sequence[float], failed: Sequence[bool]) -> tuple[float, list[float]] | None:
    """The AUROC of ``scores`` for failure (the chance that a failed run scores above a
    resolved one, ties counting half) and each run's placement value; None without a
    failed and a resolved run. A failed run's placement is the share of resolved runs it
    scores above (ties half); a resolved run's, the share of failed runs that score
    above it (ties half); the mean of either kind is the AUROC."""
    m = sum(1 for f in failed if f)
    n = len(failed) - m
    if m == 0 or n == 0:
        return None
    all_ranks = _midranks(scores)
    fail_idx = [i for i, f in enumerate(failed) if f]
    ok_idx = [i for i, f in enumerate(failed) if not f]
    fail_ranks = _midranks([scores[i] for i in fail_idx])
    ok_ranks = _midranks([scores[i] for i in ok_idx])
    place = [0.0] * len(scores)
    for i, r in zip(fail_idx, fail_ranks):
        place[i] = (all_ranks[i] - r) / n          # resolved runs below, ties half
    for i, r in zip(ok_idx, ok_ranks):
        place[i] = 1 - (all_ranks[i] - r) / m      # failed runs above, ties half
    a = sum(place[i] for i in fail_idx) / m
    return a, place


def auroc_interval(scores: Sequence[float], failed: Sequence[bool],
                   clusters: Sequence[Hashable | None], unit: str = "repository") -> Interval:
    """The AUROC of ``scores`` for failure and its interval (the module's pseudo-values)."""
    n = len(scores)
    m = sum(1 for f in failed if f)
    got = auroc(scores, failed)
    if got is None:
        return Interval(None, None, None, n, unit, 0,
                        ("no failed run" if m == 0 else "no resolved run",))
    a, place = got
    reasons = []
    if m < MIN_RUNS:
        reasons.append(f"fewer than {MIN_RUNS} failed runs ({m})")
    if n - m < MIN_RUNS:
        reasons.append(f"fewer than {MIN_RUNS} resolved runs ({n - m})")
    # pseudo-value: A + N·ψ, ψ = (placement - A) / (failed or resolved runs)
    pseudo = [a + n * (p - a) / (m if f else n - m) for p, f in zip(place, failed)]
    return _mean_interval(pseudo, clusters, reasons, unit)


# --------------------------------------------------------------------------- bins


@dataclass(frozen=True, slots=True)
class Bin:
    """Runs whose value is in (``above``, ``upto``] (None: unbounded), and their solve
    rate with its interval."""

    above: float | None
    upto: float | None
    low_value: float
    high_value: float
    resolved: int
    rate: Interval

    def to_json(self) -> dict:
        def finite(v: float | None) -> float | str | None:
            return "inf" if v is not None and math.isinf(v) else v

        return {"above": finite(self.above), "upto": finite(self.upto),
                "min": finite(self.low_value), "max": finite(self.high_value),
                "runs": self.rate.runs, "resolved": self.resolved, "solve_rate": self.rate.to_json()}


def quantile_bins(values: Sequence[float], resolved: Sequence[bool],
                  clusters: Sequence[Hashable | None], bins: int = 4,
                  unit: str = "repository") -> list[Bin]:
    """Runs binned by their value at the ``bins``-quantiles, each bin's solve rate.

    The edges are the values of rank ceil(i·n/bins) in the sorted values (i = 1 ..
    bins-1): bin i holds the values above edge i-1 and up to edge i. Equal edges are one
    (ties stay in one bin), so a signal with many equal values has fewer bins. "Not yet"
    (``math.inf``) is a bin of its own: the largest other value is an edge too."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return []
    edges = {ordered[math.ceil(i * n / bins) - 1] for i in range(1, bins)}
    if ordered[-1] == math.inf and ordered[0] < math.inf:
        edges = (edges - {math.inf}) | {max(v for v in ordered if v < math.inf)}
    edges = sorted(edges)
    if edges and edges[-1] >= ordered[-1]:
        edges.pop()          # the top edge holds every value: no bin above it
    bounds = [None, *edges, None]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        idx = [i for i, v in enumerate(values)
               if (lo is None or v > lo) and (hi is None or v <= hi)]
        if not idx:
            continue
        flags = [resolved[i] for i in idx]
        vals = [values[i] for i in idx]
        out.append(Bin(lo, hi, min(vals), max(vals), sum(flags),
                       share_interval(flags, [clusters[i] for i in idx], unit)))
    return out
