"""Is ``streameval compare`` calibrated? Simulated comparisons with a known truth.

    python benchmarks/bench_calibration.py [--datasets 1000] [--old-datasets 200] [--json OUT]

Two arms run on the same instances; the paired difference d of one metric is
``delta + u_repo + e_instance``: ``u`` is shared by a repository's pairs (its share of
the variance is the ICC) and ``e`` is the pair's own, both normal (the robustness rows
draw ``u`` from a t with 3 degrees of freedom, or a centred exponential). The sd of d is
0.25 (a line-F1 difference between two agents is about that). Repository sizes are
skewed, from 40 to 300 pairs spaced geometrically (the largest holds 88% of the pairs at
2 repositories, 43% at 5, 19% at 12), or equal at the skewed sizes' mean.

For every cell (repositories, sizes, ICC, delta) and method it reports
- coverage: the share of 95% intervals that hold delta (for a test without an interval,
  the share of tests of "the mean is delta" that do not reject: the interval that
  inverting it would give);
- p < 0.05: under delta = 0 the false-positive rate, else the power;
- gate: the share of ``--fail-if-worse`` failures with margin 0 (the one-sided test of
  "B is worse" at 2.5%); with 2 repositories or fewer the gate is not judged;
- width: the mean width of the interval;
- trusted: the share of rows the tool calls trusted.

Methods: **old** is f53415f's ``streameval compare`` itself (its tree exported from git
into a temporary directory, run in a worker process on records files: the command's own
code path); **new** is this tree's (``report.inference``: the CR2 interval with
Bell-McCaffrey degrees of freedom, p the larger of its t-test's and the cluster
sign-flip test's), computed here for all datasets of a cell at once with the module's
own functions, and checked against ``streameval compare`` run on records files for the
first ``--check`` datasets of every headline row. The candidates it was chosen from are
computed here too: the CR2 t-test alone, CR2 with Imbens and Kolesar's degrees of freedom,
the sign-flip test alone, and a wild cluster bootstrap with Webb's six-point weights.
Not run in CI; the figures go in docs/compare.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OLD_COMMIT = "f53415f"
#: the sd of one pair's difference
SD = 0.25
REPOSITORIES = (2, 3, 5, 8, 12, 30)
ICCS = (0.0, 0.2, 0.5)
DELTA = 0.05
WEBB = np.array([-np.sqrt(1.5), -1, -np.sqrt(0.5), np.sqrt(0.5), 1, np.sqrt(1.5)])


@dataclass(frozen=True)
class Cell:
    repos: int
    sizes: str          # "equal" | "skewed"
    icc: float
    delta: float
    effects: str = "normal"     # the repository part: normal | t3 | skew

    def label(self) -> str:
        return f"{self.repos} {self.sizes} icc={self.icc:g} delta={self.delta:g} {self.effects}"


def repo_sizes(repos: int, kind: str) -> np.ndarray:
    """Pairs per repository: skewed from 40 to 300, geometric; equal at their mean."""
    skewed = np.round(40 * (300 / 40) ** (np.arange(repos) / (repos - 1))).astype(int)[::-1]
    if kind == "skewed":
        return skewed
    return np.full(repos, int(round(skewed.mean())))


def simulate(cell: Cell, datasets: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs x datasets) differences and baseline values, and each pair's repository."""
    n = repo_sizes(cell.repos, cell.sizes)
    idx = np.repeat(np.arange(cell.repos), n)
    rng = np.random.default_rng([seed, cell.repos, cell.sizes == "skewed",
                                 int(cell.icc * 100), int(cell.delta * 1000),
                                 ("normal", "t3", "skew").index(cell.effects)])
    scale = SD * np.sqrt(cell.icc)
    if cell.effects == "t3":
        u = rng.standard_t(3, (cell.repos, datasets)) / np.sqrt(3) * scale
    elif cell.effects == "skew":
        u = (rng.exponential(1.0, (cell.repos, datasets)) - 1) * scale
    else:
        u = rng.normal(0, scale, (cell.repos, datasets))
    e = rng.normal(0, SD * np.sqrt(1 - cell.icc), (len(idx), datasets))
    d = cell.delta + u[idx] + e
    a = rng.uniform(0.2, 0.8, d.shape)
    return d, a, idx


# --------------------------------------------------------------------------- the command


def records(values: np.ndarray, idx: np.ndarray) -> list[dict]:
    """One scored record per pair: line F1 is the value, the repository is named."""
    return [{"instance_id": f"repo{j}__x-{i}", "repo": f"o/repo{j}", "num_steps": 1,
             "final": {"line": {"coverage": 0.0, "precision": 0.0, "f1": float(v)}}}
            for i, (j, v) in enumerate(zip(idx.tolist(), values.tolist()))]


def run_command(cells: list[dict], resamples: int) -> list[dict]:
    """Each dataset through ``streameval compare`` (whichever tree is imported): records
    files written, ``main`` called with ``--json`` and ``--fail-if-worse line.f1``."""
    import orjson

    from streameval.commands.main import main

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        fa, fb, fj = (Path(tmp) / x for x in ("a.jsonl", "b.jsonl", "c.json"))
        for spec in cells:
            cell = Cell(**spec["cell"])
            d, a, idx = simulate(cell, spec["datasets"], spec["seed"])
            rows = []
            for r in range(spec.get("only", d.shape[1])):
                for path, v in ((fa, a[:, r]), (fb, a[:, r] + d[:, r])):
                    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in records(v, idx)))
                code = main(["compare", "--arm", f"A={fa}", "--arm", f"B={fb}", "--quiet",
                             "--metrics", "line.f1", "--resamples", str(resamples),
                             "--seed", str(r), "--json", str(fj), "--fail-if-worse", "line.f1"])
                m = orjson.loads(fj.read_bytes())["comparisons"][0]["metrics"][0]
                rows.append((m["low"], m["high"], m["p"], code == 1, m["trusted"]))
            out.append({"cell": spec["cell"], "rows": rows})
    return out


def old_command(cells: list[Cell], datasets: int, seed: int, resamples: int) -> list[dict]:
    """``run_command`` under f53415f's tree, exported from git into a temporary directory
    and imported first in a worker process."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_COMMIT, "streameval"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": tmp}
        spec = json.dumps({"resamples": resamples, "cells": [
            {"cell": asdict(c), "datasets": datasets, "seed": seed} for c in cells]})
        proc = subprocess.run([sys.executable, __file__, "--worker"], input=spec, env=env,
                              cwd=tmp, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout)


def worker() -> None:
    spec = json.loads(sys.stdin.read())
    json.dump(run_command(spec["cells"], spec["resamples"]), sys.stdout)


def command_rows(rows: list) -> dict[str, np.ndarray]:
    def col(k: int) -> np.ndarray:
        return np.array([np.nan if r[k] is None else r[k] for r in rows], dtype=float)

    return {"low": col(0), "high": col(1), "p": col(2),
            "gate": np.array([bool(r[3]) for r in rows]),
            "trusted": np.array([bool(r[4]) for r in rows])}


# --------------------------------------------------------------------------- the methods


def units_of(d: np.ndarray, idx: np.ndarray, repos: int, level: str):
    """Cluster sums and sizes at the level the inference is made at."""
    from streameval.report.inference import cluster_sums

    if level == "instance":
        return d, np.ones(d.shape[0])
    return cluster_sums(d, idx, repos)


def new_method(cell: Cell, d: np.ndarray, idx: np.ndarray, flips: int, seed: int
               ) -> dict[str, np.ndarray]:
    """What ``clustered_mean`` gives for every dataset (column) of a cell, with its own
    functions: repository level from 3 repositories, else instance level."""
    from scipy import stats

    from streameval.report.inference import (
        FEW_REPOSITORIES,
        MIN_PAIRS,
        MIN_REPOSITORIES,
        bm_df,
        cr2,
        flip_pvalues,
    )

    level = "instance" if cell.repos <= FEW_REPOSITORIES else "repository"
    sums, sizes = units_of(d, idx, cell.repos, level)
    mean, se = cr2(sums, sizes)
    df = bm_df(sizes)
    q = stats.t.ppf(0.975, df)
    two, below, _, _ = flip_pvalues(sums, sizes, 0.0, flips, seed)
    z = mean / se
    n = repo_sizes(cell.repos, cell.sizes)
    trusted = (level == "repository" and cell.repos >= MIN_REPOSITORIES
               and n.max() <= n.sum() / 2 and n.sum() >= MIN_PAIRS)
    # the metric is line F1: a difference of shares, whose interval compare cuts to [-1, 1]
    return {"low": np.maximum(mean - q * se, -1.0), "high": np.minimum(mean + q * se, 1.0),
            "p": np.maximum(2 * stats.t.sf(np.abs(z), df), two),
            "below": np.maximum(stats.t.cdf(z, df), below),
            "judged": np.full(d.shape[1], level == "repository"),
            "trusted": np.full(d.shape[1], trusted), "level": level}


def ik_df(sums: np.ndarray, squares: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Imbens and Kolesar's degrees of freedom: Bell-McCaffrey's under a working model with
    a random repository part, its share estimated from the data (ANOVA, at least 0)."""
    total, c = sizes.sum(), len(sizes)
    within = (squares.sum(axis=0) - (sums ** 2 / sizes[:, None]).sum(axis=0)) / (total - c)
    mean = sums.sum(axis=0) / total
    between = (sizes[:, None] * (sums / sizes[:, None] - mean) ** 2).sum(axis=0) / (c - 1)
    n0 = (total - (sizes ** 2).sum() / total) / (c - 1)
    rho = np.maximum(0.0, (between - within) / n0) / within
    p = sizes / total
    cw = 1 / np.sqrt(1 - p) / total
    out = np.empty(sums.shape[1])
    for k, r in enumerate(rho):
        w = sizes * (1 + r * sizes)
        m = np.outer(cw, cw) * (np.diag(w) - np.outer(w, p) - np.outer(p, w)
                                + np.outer(p, p) * w.sum())
        out[k] = np.trace(m) ** 2 / np.trace(m @ m)
    return out


def wild_webb(sums: np.ndarray, sizes: np.ndarray, null: float, draws: int, seed: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """The restricted wild cluster bootstrap with Webb's six-point weights: the CR2 t of
    the data against that of ``draws`` reweightings of the clusters' sums of (d - null):
    two-sided and below p-values."""
    total = sizes.sum()
    shifted = sums - sizes[:, None] * null
    w = 1 / (1 - sizes / total)

    def t(v: np.ndarray) -> np.ndarray:
        num = v @ shifted
        m = num / total
        var = (v ** 2) @ (shifted ** 2 * w[:, None]) - 2 * m * (v @ (shifted * (sizes * w)[:, None])) \
            + m ** 2 * (sizes ** 2 * w).sum()
        return num / np.sqrt(np.maximum(var, 1e-300))

    obs = t(np.ones((1, len(sizes))))[0]
    v = np.random.default_rng(seed).choice(WEBB, (draws, len(sizes)))
    star = t(v)
    return ((1 + (np.abs(star) >= np.abs(obs)).sum(axis=0)) / (1 + draws),
            (1 + (star <= obs).sum(axis=0)) / (1 + draws))


def candidates(cell: Cell, d: np.ndarray, idx: np.ndarray, flips: int, seed: int
               ) -> dict[str, dict[str, np.ndarray]]:
    """Each candidate's p-values against 0 and against the truth (for its coverage), and
    the interval of those that have one (repository level: 3 repositories or more)."""
    from scipy import stats

    from streameval.report.inference import bm_df, cluster_sums, cr2, flip_pvalues

    sums, sizes = cluster_sums(d, idx, cell.repos)
    squares, _ = cluster_sums(d * d, idx, cell.repos)
    mean, se = cr2(sums, sizes)
    out = {}
    for name, df in (("CR2, Bell-McCaffrey t", bm_df(sizes)),
                     ("CR2, Imbens-Kolesar t", ik_df(sums, squares, sizes))):
        q = stats.t.ppf(0.975, df)
        out[name] = {"low": mean - q * se, "high": mean + q * se,
                     "p": 2 * stats.t.sf(np.abs(mean / se), df),
                     "below": stats.t.cdf(mean / se, df)}
    flip = flip_pvalues(sums, sizes, 0.0, flips, seed)
    flip_truth = flip_pvalues(sums, sizes, cell.delta, flips, seed)[0] if cell.delta else flip[0]
    out["sign flips"] = {"p": flip[0], "below": flip[1], "p_truth": flip_truth}
    webb = wild_webb(sums, sizes, 0.0, 1999, seed)
    webb_truth = wild_webb(sums, sizes, cell.delta, 1999, seed)[0] if cell.delta else webb[0]
    out["wild bootstrap, Webb"] = {"p": webb[0], "below": webb[1], "p_truth": webb_truth}
    return out


def summarise(cell: Cell, m: dict[str, np.ndarray]) -> dict[str, float | None]:
    if "low" in m:
        cover = (m["low"] <= cell.delta) & (cell.delta <= m["high"])
        width = float(np.nanmean(m["high"] - m["low"]))
    else:
        cover, width = m["p_truth"] >= 0.05, None
    gate = m["gate"] if "gate" in m else (m["below"] < 0.025) & m.get("judged", True)
    return {"coverage": float(np.mean(cover)), "reject": float(np.mean(m["p"] < 0.05)),
            "gate": float(np.mean(gate)), "width": width,
            "trusted": float(np.mean(m["trusted"])) if "trusted" in m else None,
            "datasets": int(len(m["p"]))}


def check_against_command(cell: Cell, new: dict, count: int, flips: int, seed: int) -> None:
    """The first ``count`` datasets through ``streameval compare`` (this tree): the same
    interval, and the same p-value (within Monte-Carlo error where flips are random)."""
    spec = {"cell": asdict(cell), "datasets": len(new["p"]), "seed": seed, "only": count}
    with contextlib.redirect_stderr(io.StringIO()):      # the gate's notes
        got = command_rows(run_command([spec], flips)[0]["rows"])
    exact = cell.repos <= 12 and new["level"] == "repository"
    np.testing.assert_allclose(got["low"], new["low"][:count], rtol=1e-9)
    np.testing.assert_allclose(got["high"], new["high"][:count], rtol=1e-9)
    np.testing.assert_allclose(got["p"], new["p"][:count], rtol=1e-9 if exact else 0,
                               atol=0 if exact else 0.02)
    assert (got["trusted"] == new["trusted"][:count]).all()


# --------------------------------------------------------------------------- tables


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def width(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def headline(rows: list[dict]) -> list[str]:
    out = ["| repositories | coverage old | coverage new | p < 0.05 old | p < 0.05 new | "
           "gate fails old | gate fails new | width old | width new | trusted new |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        o, n = r["old"], r["new"]
        out.append(f"| {r['cell']['repos']} | {pct(o['coverage'])} | {pct(n['coverage'])} | "
                   f"{pct(o['reject'])} | {pct(n['reject'])} | {pct(o['gate'])} | "
                   f"{pct(n['gate'])} | {width(o['width'])} | {width(n['width'])} | "
                   f"{pct(n['trusted'])} |")
    return out


def grid(rows: list[dict]) -> list[str]:
    out = ["| sizes | ICC | repositories | coverage | false positives | power (0.05) | width |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    by = {(r["cell"]["sizes"], r["cell"]["icc"], r["cell"]["repos"], r["cell"]["delta"]): r
          for r in rows}
    for sizes in ("skewed", "equal"):
        for icc in ICCS:
            for c in REPOSITORIES:
                null, alt = by[(sizes, icc, c, 0.0)]["new"], by[(sizes, icc, c, DELTA)]["new"]
                out.append(f"| {sizes} | {icc:g} | {c} | {pct(null['coverage'])} | "
                           f"{pct(null['reject'])} | {pct(alt['reject'])} | "
                           f"{width(null['width'])} |")
    return out


def candidate_table(rows: list[dict]) -> list[str]:
    names = list(rows[0]["candidates"])
    out = ["| repositories | " + " | ".join(f"{n}: false positives / coverage / power"
                                            for n in names) + " |",
           "|---:|" + "---:|" * len(names)]
    by = {(r["cell"]["repos"], r["cell"]["delta"]): r for r in rows}
    for c in REPOSITORIES[1:]:
        null, alt = by[(c, 0.0)]["candidates"], by[(c, DELTA)]["candidates"]
        out.append(f"| {c} | " + " | ".join(
            f"{pct(null[n]['reject'])} / {pct(null[n]['coverage'])} / {pct(alt[n]['reject'])}"
            for n in names) + " |")
    return out


def robustness_table(rows: list[dict]) -> list[str]:
    out = ["| repository part | repositories | CR2 t alone | sign flips alone | new |",
           "|---|---:|---:|---:|---:|"]
    for r in rows:
        c = r["candidates"]
        out.append(f"| {r['cell']['effects']} | {r['cell']['repos']} | "
                   f"{pct(c['CR2, Bell-McCaffrey t']['reject'])} | "
                   f"{pct(c['sign flips']['reject'])} | {pct(r['new']['reject'])} |")
    return out


# --------------------------------------------------------------------------- main


def study(args: argparse.Namespace) -> dict:
    result: dict = {"args": {k: v for k, v in vars(args).items() if k != "json"}}
    t0 = time.perf_counter()
    heads = [Cell(c, "skewed", 0.2, 0.0) for c in REPOSITORIES] + [Cell(12, "skewed", 0.2, DELTA)]
    old = old_command(heads, args.old_datasets, args.seed, args.old_resamples) \
        if args.old_datasets else []
    print(f"old method: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rows = []
    for sizes in ("skewed", "equal"):
        for icc in ICCS:
            for c in REPOSITORIES:
                for delta in (0.0, DELTA):
                    cell = Cell(c, sizes, icc, delta)
                    d, _, idx = simulate(cell, args.datasets, args.seed)
                    new = new_method(cell, d, idx, args.flips, args.seed)
                    row = {"cell": asdict(cell), "new": summarise(cell, new)}
                    head = cell in heads
                    if head and args.check:
                        check_against_command(cell, new, args.check, args.flips, args.seed)
                    if head and old:
                        row["old"] = summarise(cell, command_rows(old[heads.index(cell)]["rows"]))
                    if sizes == "skewed" and icc == 0.2 and c > 2:
                        row["candidates"] = {k: summarise(cell, v) for k, v in
                                             candidates(cell, d, idx, args.flips,
                                                        args.seed).items()}
                    rows.append(row)
    print(f"grid: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    robust = []
    for effects in ("t3", "skew"):
        for c in (5, 8, 12, 30):
            cell = Cell(c, "skewed", 0.2, 0.0, effects)
            d, _, idx = simulate(cell, args.datasets, args.seed)
            robust.append({"cell": asdict(cell),
                           "new": summarise(cell, new_method(cell, d, idx, args.flips, args.seed)),
                           "candidates": {k: summarise(cell, v) for k, v in
                                          candidates(cell, d, idx, args.flips, args.seed).items()}})
    result.update(rows=rows, robustness=robust, seconds=round(time.perf_counter() - t0))
    return result


def tables(result: dict) -> str:
    rows, args = result["rows"], result["args"]
    heads = [r for r in rows if "old" in r]
    cand = [r for r in rows if "candidates" in r]
    parts = [f"{args['datasets']} datasets per cell (old: {args['old_datasets']}, "
             f"{args['old_resamples']} resamples), seed {args['seed']}, "
             f"{args['flips']} random flips above 12 units; {result['seconds']} s", ""]
    if heads:
        parts += ["Skewed sizes, ICC 0.2, no difference (power: 12 repositories, 0.05):", "",
                  *headline(heads), ""]
    parts += ["The new method, every cell:", "", *grid(rows), "",
              "Candidates, skewed sizes, ICC 0.2 (false positives / coverage / power at 0.05):",
              "", *candidate_table(cand), "",
              "False positives when the repository part is not normal (skewed sizes, ICC 0.2):",
              "", *robustness_table(result["robustness"])]
    return "\n".join(parts) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--datasets", type=int, default=1000, help="per cell, new method")
    ap.add_argument("--old-datasets", type=int, default=200,
                    help="per headline row, f53415f's command (0: not run)")
    ap.add_argument("--old-resamples", type=int, default=1000)
    ap.add_argument("--flips", type=int, default=10_000,
                    help="random sign flips above 12 units (compare's --resamples)")
    ap.add_argument("--check", type=int, default=3,
                    help="datasets per headline row checked against streameval compare")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--tables", type=Path, help="print the tables of a saved --json run")
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    result = json.loads(args.tables.read_text()) if args.tables else study(args)
    if args.json and not args.tables:
        args.json.write_text(json.dumps(result, indent=1))
    sys.stdout.write(tables(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
