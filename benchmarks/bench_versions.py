"""Two versions of streameval on the same replay workload, alternating, same machine and minute.

    python benchmarks/bench_versions.py --old f53415f --oracle ../shared/oracle \\
        [--rounds 3] [--sizes 50,300,1000,3000] [--new-args ...] [--json FILE]

The workload of issue 16: ``streameval replay`` of unified predictions for
``pydata__xarray-6721`` and ``fasterxml__jackson-core-964`` (``synth_pred.py INST N``,
one record each: 2 x N steps), scored against the evaluator's gold with its repositories
(``../shared/oracle``, set up offline). Each version runs as its own process from its own
checkout (``--old``: a git revision, written out once, or a checkout; ``--old-python`` its
interpreter, by default this one: see ``older.py``), the versions alternating within every
round, so both see the same machine state. Figures: whole-process seconds per size (the
minimum and the median of the rounds), and the cost of one more step: the slope between
the smallest and the largest size, per step, and its median over the rounds.
``--instructions`` counts that step's instructions instead (valgrind's cachegrind; one
run of each size and version): the figure a busy machine does not move.

Both versions score in one process: the new one is given ``--workers 1`` (since issue 28
its default is the cores available, which would time two processes against one and, under
cachegrind, count only the parent's instructions; f53415f's default was 1).

``--new-args`` are extra ``replay`` options for the new version only (``--grammars
official``: the tree-sitter grammars the older version parses with, for a like-for-like
run; the new default is the evaluator's own grammar bundle where it is installed).

No pytest: wall-clock numbers belong here, not in tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from machine import describe  # noqa: E402
from older import Version, add_arguments, head, label, versions  # noqa: E402

_spec = importlib.util.spec_from_file_location("oracle_parity", REPO / "scripts" / "oracle_parity.py")
parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity)  # type: ignore[union-attr]

INSTANCES = ("pydata__xarray-6721", "fasterxml__jackson-core-964")


def predictions(oracle: Path, size: int, work: Path) -> Path:
    out = work / f"pred-{size}.jsonl"
    rows = []
    for inst in INSTANCES:
        one = work / f"{inst}-{size}.json"
        subprocess.run([sys.executable, str(oracle / "synth_pred.py"), inst, str(size), str(one),
                        "--seed", "7"], check=True, capture_output=True)
        rows.append(one.read_text())
    out.write_text("".join(r.strip() + "\n" for r in rows))
    return out


def timed(version: Version, pred: Path, extra: list[str]) -> float:
    t0 = time.perf_counter()
    version.run(["-m", "streameval", "replay", str(pred), "--gold", str(parity.GOLD),
                 "--repos", str(parity.REPOS), "--quiet", "--out", "/dev/null", *extra],
                check=True, capture_output=True)
    return time.perf_counter() - t0


def instructions(version: Version, pred: Path, extra: list[str]) -> int:
    """Instructions of one ``streameval replay`` of ``pred`` (cachegrind: the same count
    on a busy machine as on a quiet one)."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         version.python, "-m", "streameval", "replay", str(pred), "--gold", str(parity.GOLD),
         "--repos", str(parity.REPOS), "--quiet", "--out", "/dev/null", *extra],
        cwd=version.checkout, env={**version.env, "PYTHONHASHSEED": "0"},
        capture_output=True, text=True, check=True)
    refs = next(ln for ln in done.stderr.splitlines() if "I   refs" in ln)
    return int(refs.split()[-1].replace(",", ""))


def per_step_instructions(runs: dict, preds: dict[int, Path], sizes: list[int],
                          out: Path | None) -> int:
    """Instructions per extra step, each version: the smallest size against the largest."""
    lo, hi = sizes[0], sizes[-1]
    result = {"machine": describe(), "sizes": [lo, hi], "versions": {}}
    for name, (version, extra) in runs.items():
        per = (instructions(version, preds[hi], extra) - instructions(version, preds[lo], extra)
               ) / (2 * (hi - lo))
        result["versions"][name] = per
        print(f"{name}: {per:,.0f} instructions per extra step (2x{lo} -> 2x{hi})", flush=True)
    print(f"old / new: {result['versions']['old'] / result['versions']['new']:.2f}")
    if out:
        out.write_text(json.dumps(result, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_arguments(p, required=True)
    p.add_argument("--new-args", default="", help="extra replay options for the new version")
    p.add_argument("--oracle", type=Path, required=True, help="the shared oracle folder")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="50,300,1000,3000", help="steps per prediction")
    p.add_argument("--json", type=Path)
    p.add_argument("--instructions", action="store_true",
                   help="count the instructions of one more step (valgrind), not seconds")
    a = p.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    preds = {n: predictions(a.oracle, n, work) for n in sizes}
    new, old = versions(a)
    runs = {"old": (old, []), "new": (new, ["--workers", "1", *a.new_args.split()])}
    for version, extra in runs.values():   # warm caches, check it runs
        timed(version, preds[sizes[0]], extra)
    if a.instructions:
        return per_step_instructions(runs, preds, sizes, a.json)
    times: dict[str, dict[int, list[float]]] = {v: {n: [] for n in sizes} for v in runs}
    for r in range(a.rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for n in sizes:
            for name in order:
                version, extra = runs[name]
                times[name][n].append(timed(version, preds[n], extra))
        print(f"round {r + 1}: " + "; ".join(
            f"{v} " + ", ".join(f"2x{n} {times[v][n][-1]:.2f} s" for n in sizes)
            for v in runs), flush=True)
    lo, hi = sizes[0], sizes[-1]
    result = {"machine": describe(), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "old": label(a), "new": head(), "new_args": a.new_args, "sizes": sizes,
              "rounds": a.rounds, "versions": {}}
    print(f"\n{describe()}; old: {result['old']}; new: {result['new']}; "
          f"new-args: {a.new_args or '(none)'}")
    print(f"{'steps':>8}" + "".join(f"{v + ' min':>12}{v + ' median':>12}" for v in runs))
    for n in sizes:
        print(f"{'2x' + str(n):>8}" + "".join(
            f"{min(times[v][n]):>12.3f}{statistics.median(times[v][n]):>12.3f}" for v in runs))
    for v in runs:
        slope = [(b - a_) / (2 * (hi - lo)) * 1000 for a_, b in zip(times[v][lo], times[v][hi])]
        result["versions"][v] = {"seconds": {str(n): times[v][n] for n in sizes},
                                 "ms_per_extra_step": slope}
        print(f"{v}: per extra step (2x{lo} -> 2x{hi}) "
              + ", ".join(f"{s:.3f}" for s in slope) + f" ms; median {statistics.median(slope):.3f}")
    ratio = [o / n for o, n in zip(result["versions"]["old"]["ms_per_extra_step"],
                                   result["versions"]["new"]["ms_per_extra_step"])]
    result["old_over_new_per_extra_step"] = ratio
    print("old / new, per extra step, each round: " + ", ".join(f"{x:.2f}" for x in ratio)
          + f"; median {statistics.median(ratio):.2f}")
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
