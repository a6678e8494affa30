"""Two versions of streameval on the same replay workload, alternating, same machine and minute.

    python benchmarks/bench_versions.py --old /tmp/old --old-python /tmp/old/.venv/bin/python \\
        --oracle ../shared/oracle [--rounds 3] [--sizes 50,300,3000] [--new-args ...]

The workload of issue 16: ``streameval replay`` of unified predictions for
``pydata__xarray-6721`` and ``fasterxml__jackson-core-964`` (``synth_pred.py INST N``,
one record each: 2 x N steps), scored against the evaluator's gold with its repositories
(``../shared/oracle``, set up offline). Each version runs as its own process from its own
checkout and interpreter (``--old``: a ``git worktree`` of the older commit with its own
virtualenv), the versions alternating within every round, so both see the same machine
state. Figures: whole-process seconds per size (the minimum and the median of the
rounds), and the cost of one more step: the slope between the smallest and the largest
size, per step.

``--new-args`` are extra ``replay`` options for the new version only (``--grammars
official``: the tree-sitter grammars the older version parses with, for a like-for-like
run; the new default is the evaluator's own grammar bundle where it is installed).

No pytest: wall-clock numbers belong here, not in tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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


#: as a user's install runs: with its bytecode cache (a sandbox may set
#: PYTHONDONTWRITEBYTECODE, which makes every start compile every module it imports)
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(python: str, checkout: Path, pred: Path, extra: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "streameval", "replay", str(pred), "--gold", str(parity.GOLD),
                    "--repos", str(parity.REPOS), "--quiet", "--out", "/dev/null", *extra],
                   check=True, capture_output=True, cwd=checkout, env=_ENV)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--old", type=Path, required=True, help="checkout of the older version")
    p.add_argument("--old-python", required=True, help="its interpreter (its own venv)")
    p.add_argument("--new", type=Path, default=REPO, help="checkout of the newer version")
    p.add_argument("--new-python", default=sys.executable)
    p.add_argument("--new-args", default="", help="extra replay options for the new version")
    p.add_argument("--oracle", type=Path, required=True, help="the shared oracle folder")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="50,300,3000", help="steps per prediction")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    preds = {n: predictions(a.oracle, n, work) for n in sizes}
    versions = {"old": (a.old_python, a.old, []), "new": (a.new_python, a.new, a.new_args.split())}
    for py, checkout, extra in versions.values():   # warm caches, check it runs
        timed(py, checkout, preds[sizes[0]], extra)
    times: dict[str, dict[int, list[float]]] = {v: {n: [] for n in sizes} for v in versions}
    for r in range(a.rounds):
        order = list(versions) if r % 2 == 0 else list(reversed(versions))
        for n in sizes:
            for name in order:
                py, checkout, extra = versions[name]
                times[name][n].append(timed(py, checkout, preds[n], extra))
        print(f"round {r + 1}: " + "; ".join(
            f"{v} " + ", ".join(f"2x{n} {times[v][n][-1]:.2f} s" for n in sizes)
            for v in versions), flush=True)
    lo, hi = sizes[0], sizes[-1]
    result = {"machine": describe(), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "new_args": a.new_args, "sizes": sizes, "rounds": a.rounds, "versions": {}}
    print(f"\n{describe()}; new-args: {a.new_args or '(none)'}")
    print(f"{'steps':>8}" + "".join(f"{v + ' min':>12}{v + ' median':>12}" for v in versions))
    for n in sizes:
        print(f"{'2x' + str(n):>8}" + "".join(
            f"{min(times[v][n]):>12.3f}{statistics.median(times[v][n]):>12.3f}" for v in versions))
    for v in versions:
        slope = [(b - a_) / (2 * (hi - lo)) * 1000 for a_, b in zip(times[v][lo], times[v][hi])]
        result["versions"][v] = {"seconds": {str(n): times[v][n] for n in sizes},
                                 "ms_per_extra_step": slope}
        print(f"{v}: per extra step (2x{lo} -> 2x{hi}) "
              + ", ".join(f"{s:.3f}" for s in slope) + " ms")
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
