"""Do ``streameval outcomes``' AUROC intervals (and ``--tune``'s saved-share intervals)
cover the truth 95% of the time? Simulated fleets shaped like the real one.

    python benchmarks/bench_auroc_coverage.py [--fleets 400] [--resamples 500] [--json OUT]

A fleet's runs sit in repositories of the sizes of the 500 Gemini 3 Pro runs
(benchmarks/outcomes_real.py: django 231, sympy 75, ... flask 1; 12 repositories, one
holding 46% of the runs), or of its 192 runs with gold (9 repositories), or of a
random 30% of them (the runs alive at step 20). Each repository j draws an effect on
failure v_j ~ N(0, 0.6) (logit) and one on the signal u_j ~ N(0, sd_u); a run fails
with probability logistic(-1.05 + v_j) (about the real 26%) and its signal is
u_j + delta · failed + N(0, 1). The truth is the AUROC of failure over the population of
such runs (a run and a run of another fleet are as alike as two repositories': the
pooled AUROC of 300,000 runs from fresh fleets). delta 0 is a signal that foretells
nothing (truth 0.5); delta 0.6 one as strong as the best the real data show (~0.65).

Methods:
- **pseudo-CR2** (this tree, ``report.outcome_stats.auroc_interval``): the AUROC's
  pseudo-values (Obuchowski's clustered variance) through ``report.inference``'s CR2
  interval with Bell-McCaffrey degrees of freedom, repositories as units;
- **cluster bootstrap**: repositories resampled with replacement, the AUROC of the
  pooled resample, the 2.5th and 97.5th percentiles (``--resamples``);
- **DeLong, i.i.d.**: the same pseudo-values with every run its own unit (what one gets
  ignoring repositories).
Also the saved share (Σ saved / Σ spent, ``report.outcome_stats.ratio_interval``, the
figure ``--tune`` reports with an interval): spend lognormal with a repository effect,
a stop saving a uniform share of it on 40% of the failed runs.

Not run in CI; the table goes in docs/outcomes.md §6.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from streameval.report.outcome_stats import auroc_interval, ratio_interval  # noqa: E402

#: the 500 runs by repository, and the 192 with gold
ALL = (231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1)
GOLD = (74, 42, 22, 19, 17, 8, 7, 2, 1)
ALPHA = -1.05          # logit of the failure rate without a repository effect (~26%)
SD_V = 0.6             # repositories' effect on failure (logit)


def fleet(rng: np.random.Generator, sizes, delta: float, sd_u: float, keep: float = 1.0):
    """One simulated fleet: signal, failed, repository of each run (``keep``: the share
    of each repository's runs that reached the step)."""
    xs, fs, cs = [], [], []
    for j, n in enumerate(sizes):
        n = rng.binomial(n, keep) if keep < 1 else n
        if n == 0:
            continue
        v, u = rng.normal(0, SD_V), rng.normal(0, sd_u)
        failed = rng.random(n) < 1 / (1 + np.exp(-(ALPHA + v)))
        xs.append(u + delta * failed + rng.normal(0, 1, n))
        fs.append(failed)
        cs.append(np.full(n, j))
    return np.concatenate(xs), np.concatenate(fs), np.concatenate(cs)


def auroc_np(x: np.ndarray, failed: np.ndarray) -> float:
    from scipy.stats import rankdata

    m = failed.sum()
    n = len(x) - m
    if m == 0 or n == 0:
        return float("nan")
    r = rankdata(x)
    return float((r[failed].sum() - m * (m + 1) / 2) / (m * n))


def truth(rng: np.random.Generator, sizes, delta: float, sd_u: float, runs: int = 300_000) -> float:
    xs, fs = [], []
    total = 0
    while total < runs:
        x, f, _c = fleet(rng, sizes, delta, sd_u)
        xs.append(x)
        fs.append(f)
        total += len(x)
    return auroc_np(np.concatenate(xs), np.concatenate(fs))


def bootstrap(rng: np.random.Generator, x, f, c, resamples: int) -> tuple[float, float]:
    groups = [np.flatnonzero(c == k) for k in np.unique(c)]
    reps = []
    for _ in range(resamples):
        pick = rng.integers(0, len(groups), len(groups))
        idx = np.concatenate([groups[k] for k in pick])
        a = auroc_np(x[idx], f[idx])
        if a == a:
            reps.append(a)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return float(lo), float(hi)


def cell(name: str, sizes, delta: float, sd_u: float, keep: float, fleets: int,
         resamples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    true = truth(rng, sizes, delta, sd_u)
    hits = {"pseudo-CR2": [], "cluster bootstrap": [], "DeLong, i.i.d.": []}
    widths = {k: [] for k in hits}
    runs = []
    for _ in range(fleets):
        x, f, c = fleet(rng, sizes, delta, sd_u, keep)
        runs.append(len(x))
        if f.all() or not f.any():
            continue
        xs, fl, cl = x.tolist(), f.tolist(), [int(k) for k in c]
        for method, unit in (("pseudo-CR2", "repository"), ("DeLong, i.i.d.", "instance")):
            iv = auroc_interval(xs, fl, cl, unit)
            if iv.low is None:
                continue
            hits[method].append(iv.low <= true <= iv.high)
            widths[method].append(iv.high - iv.low)
        lo, hi = bootstrap(rng, x, f, c, resamples)
        hits["cluster bootstrap"].append(lo <= true <= hi)
        widths["cluster bootstrap"].append(hi - lo)
    return {"cell": name, "delta": delta, "sd_u": sd_u, "truth": round(true, 4),
            "runs": int(np.median(runs)),
            "methods": {k: {"coverage": round(float(np.mean(v)), 3), "fleets": len(v),
                            "width": round(float(np.median(widths[k])), 3)}
                        for k, v in hits.items()}}


def ratio_cell(sizes, fleets: int, seed: int, sdlog: float) -> dict:
    """The saved share's interval: spend lognormal(10 + w_j, sdlog), w_j ~ N(0, 0.5) (the
    real runs' tokens have a log-sd of 0.77); 40% of the failed runs stopped, saving a
    uniform share of their spend. Beside it, the same linearisation's interval on the
    share's own scale (what ``ratio_interval`` gave before it went to the logit scale)."""
    rng = np.random.default_rng(seed)

    def one():
        ys, xs, cs = [], [], []
        for j, n in enumerate(sizes):
            v, w = rng.normal(0, SD_V), rng.normal(0, 0.5)
            failed = rng.random(n) < 1 / (1 + np.exp(-(ALPHA + v)))
            y = rng.lognormal(10 + w, sdlog, n)
            stopped = failed & (rng.random(n) < 0.4)
            ys.append(y)
            xs.append(np.where(stopped, y * rng.random(n), 0.0))
            cs.append(np.full(n, j))
        return np.concatenate(xs), np.concatenate(ys), np.concatenate(cs)

    from streameval.report.inference import clustered_mean

    big = [one() for _ in range(600)]
    true = sum(x.sum() for x, _y, _c in big) / sum(y.sum() for _x, y, _c in big)
    hits, widths, flat = [], [], []
    for _ in range(fleets):
        x, y, c = one()
        iv = ratio_interval(x.tolist(), y.tolist(), [int(k) for k in c])
        if iv.low is None:
            continue
        hits.append(iv.low <= true <= iv.high)
        widths.append(iv.high - iv.low)
        r = x.sum() / y.sum()
        lin = clustered_mean((r + (x - r * y) / y.mean()).tolist(), [int(k) for k in c],
                             flips=10)
        flat.append(lin.low <= true <= lin.high)
    return {"cell": f"saved share, 500 runs / 12 repositories, spend log-sd {sdlog}",
            "truth": round(float(true), 4), "coverage": round(float(np.mean(hits)), 3),
            "linear_scale_coverage": round(float(np.mean(flat)), 3), "fleets": len(hits),
            "width": round(float(np.median(widths)), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fleets", type=int, default=400)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only-ratio", action="store_true", help="the saved share's cells alone")
    args = ap.parse_args()
    started = time.monotonic()
    cells = []
    plan = [("500 runs / 12 repositories (the end)", ALL, 1.0),
            ("~150 runs / ~11 repositories (alive at step 20)", ALL, 0.3),
            ("192 runs / 9 repositories (with gold)", GOLD, 1.0),
            ("~60 runs / ~7 repositories (with gold, step 20)", GOLD, 0.3)]
    for i, (name, sizes, keep) in enumerate([] if args.only_ratio else plan):
        for delta in (0.0, 0.6):
            for sd_u in (0.0, 0.5):
                cells.append(cell(name, sizes, delta, sd_u, keep, args.fleets, args.resamples,
                                  args.seed + 100 * i + int(10 * delta) + int(10 * sd_u)))
                c = cells[-1]
                print(f"{name:<48} delta {delta:<3} sd_u {sd_u:<3} truth {c['truth']:.3f}  "
                      + "  ".join(f"{k}: {v['coverage']:.3f} (w {v['width']:.3f})"
                                  for k, v in c["methods"].items()), flush=True)
    ratios = [ratio_cell(ALL, args.fleets, args.seed + 7, sdlog) for sdlog in (0.77, 1.0)]
    for r in ratios:
        print(f"{r['cell']:<64} truth {r['truth']:.3f}  coverage {r['coverage']:.3f} "
              f"(w {r['width']:.3f}; on the share's own scale {r['linear_scale_coverage']:.3f})")
    out = {"fleets": args.fleets, "resamples": args.resamples, "seed": args.seed,
           "cells": cells, "ratios": ratios, "seconds": round(time.monotonic() - started, 1)}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
