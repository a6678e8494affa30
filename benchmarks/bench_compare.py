"""How long ``streameval compare`` takes at the size of SWE-bench Verified: every metric
x 500 instances x 12 repositories, and the heaviest case, ``--unit instance`` (10,000
random sign flips of 500 instances per metric).

    python benchmarks/bench_compare.py [--instances 500] [--resamples 10000] [--repos 12]

It builds two arms of synthetic records (every metric ``report.fields`` knows, per-step
curves of 30 steps, instances spread over ``--repos`` repositories as SWE-bench Verified
is over 12), then times, best of three:

- ``compare_arms`` end to end (reduce both arms, the inference of every metric: CR2 and
  the exact sign-flip test over the 12 repositories, Holm, the curves with their bands);
- the inference alone (``clustered_mean`` per metric), by repository and by instance.

Wall-clock figures depend on the machine; they go in benchmarks/README.md, never in a test.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from streameval.model import GRANULARITIES
from streameval.report.arms import reduce_arm
from streameval.report.compare import compare_arms
from streameval.report.fields import METRICS
from streameval.report.inference import clustered_mean


def record(rng: random.Random, iid: str, repo: str, shift: float) -> dict:
    def block() -> dict:
        c, p = min(1.0, rng.random() + shift), rng.random()
        return {"coverage": c, "precision": p, "intersection": 1, "gold_size": 2,
                "pred_size": 3, "f1": 2 * c * p / (c + p) if c + p else 0.0}

    steps = [{"step": i + 1, "coverage": {g: min(1.0, (i + 1) / 30 + shift) for g in GRANULARITIES}}
             for i in range(30)]
    return {
        "instance_id": iid, "repo": repo, "num_steps": 30, "tool_calls": rng.randint(10, 90),
        "final": {g: block() for g in GRANULARITIES},
        "trajectory": {"steps": steps, "auc_coverage": {g: rng.random() for g in GRANULARITIES},
                       "redundancy": {g: rng.random() for g in GRANULARITIES}},
        "editloc": {"recall": rng.random(), "precision": rng.random()},
        "tokens": {"input": rng.randint(10_000, 900_000), "output": 5000, "cache_read": 0,
                   "cache_creation": 0},
        "cost_usd": rng.random(), "first_gold_file_step": rng.randint(1, 20),
        "first_gold_file_seconds": rng.random() * 100, "first_gold_line_step": rng.randint(1, 30),
        "localisation": {"recall_at": {str(k): rng.random() for k in (1, 3, 5, 10)},
                         "precision_at": {str(k): rng.random() for k in (1, 3, 5, 10)},
                         "mrr": rng.random(), "ndcg_at_10": rng.random(),
                         "first_gold_file_tokens": rng.randint(0, 10**6),
                         "full_file_coverage_step": rng.randint(1, 30),
                         "full_file_coverage_seconds": rng.random() * 300,
                         "full_file_coverage_tokens": rng.randint(0, 10**6)},
    }


def best(f, n: int = 3) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=500)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repos", type=int, default=12)
    args = ap.parse_args()
    rng = random.Random(1)
    ids = [(f"repo{i % args.repos}__x-{i}", f"o/repo{i % args.repos}")
           for i in range(args.instances)]
    a = [record(rng, iid, repo, 0.0) for iid, repo in ids]
    b = [record(rng, iid, repo, 0.05) for iid, repo in ids]
    print(f"{args.instances} instances in {args.repos} repositories, {len(METRICS)} metrics, "
          f"{args.resamples:,} resamples")

    def end_to_end():
        arms = [reduce_arm("a", a, METRICS), reduce_arm("b", b, METRICS)]
        return compare_arms(arms, METRICS, flips=args.resamples, seed=0)

    print(f"compare_arms, end to end:              {best(end_to_end):7.2f} s")
    arms = [reduce_arm("a", a, METRICS), reduce_arm("b", b, METRICS)]
    keys = sorted(arms[0].rows)
    diffs = np.array([[(arms[1].rows[k].values[m.name] or 0) - (arms[0].rows[k].values[m.name] or 0)
                       for m in METRICS] for k in keys])
    clusters = [arms[0].rows[k].cluster for k in keys]
    for unit in ("repository", "instance"):
        def every_metric(unit=unit):
            return [clustered_mean(diffs[:, j], clusters, unit=unit, flips=args.resamples)
                    for j in range(len(METRICS))]
        print(f"inference of every metric, by {unit + ':':<11} {best(every_metric):7.2f} s")


if __name__ == "__main__":
    main()
