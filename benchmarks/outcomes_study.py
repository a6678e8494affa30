"""Which live signals foretell failure on 500 real runs, and what tuned early abort would
have saved and lost (issue 30's study; its tables are in benchmarks/README.md and
docs/outcomes.md §9).

    python benchmarks/outcomes_real.py OUT --workers 1     # the records, runs and gold
    python benchmarks/outcomes_study.py OUT [--seeds 0,1,2,3,4]

Over ``outcomes_real.py``'s folder (Gemini 3 Pro's 500 SWE-bench Verified runs, their
harness ``report.json`` outcomes, gold where it could be had), with this checkout's
``streameval``:

1. ``streameval outcomes OUT/records.jsonl --steps 5,10,20,40``: every signal's AUROC for
   failure at steps 5, 10, 20, 40 and the end (``OUT/study/outcomes.{json,html}``);
2. ``streameval abort-backtest --tune`` over the 500 runs, gold-free kinds, one split per
   seed: the pick and its held-out figures, and the held-out front of plain step limits
   (the turn limits EET compares with);
3. the same over the 192 runs with gold (their traces hard-linked into
   ``OUT/gold_runs``), gold kinds too.

Prints the tables as markdown; writes every JSON under ``OUT/study``. Local files only;
not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTEXTBENCH = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"
GOLD_FREE = ("steps", "tool_calls", "tokens", "cost_usd", "files_read", "reread_share",
             "redundancy", "repeated_calls", "max_repeats", "steps_since_new_file",
             "test_runs", "edits")
GOLD = ("file.coverage", "line.coverage", "line.precision", "line.f1", "line.auc",
        "symbol.coverage", "span.coverage", "first_gold_file_step", "first_gold_line_step")


def streameval(*args: str) -> int:
    cmd = [sys.executable, "-m", "streameval", *args]
    print("$ streameval " + " ".join(args), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL).returncode


def iv(d: dict | None, pct: bool = False) -> str:
    if not d or d.get("estimate") is None:
        return "-"
    f = (lambda v: f"{100 * v:.1f}%") if pct else (lambda v: f"{v:.2f}")
    mark = "*" if d.get("reasons") else ""
    if d.get("low") is None:
        return f"{f(d['estimate'])}{mark}"
    return f"{f(d['estimate'])} [{f(d['low'])}, {f(d['high'])}]{mark}"


def auroc_table(data: dict, names: tuple[str, ...]) -> list[str]:
    steps = [*data["steps"], None]
    head = ["signal", *[f"step {k}" if k else "end" for k in steps]]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    # the runs that have the table's second signal (tool_calls: every run; line
    # coverage: the runs with gold) at each step, and how many of them failed
    first = {c["step"]: c for c in data["signals"][names[1]]}
    rows.append("| runs (failed) | " + " | ".join(
        f"{first[k]['runs']} ({first[k]['failed']})" if k in first else "" for k in steps) + " |")
    for name in names:
        cells = {c["step"]: c for c in data["signals"][name]}
        rows.append(f"| {name} | " + " | ".join(
            iv(cells[k]["auroc"]) if k in cells else "" for k in steps) + " |")
    return rows


def tune(out: Path, runs: Path, logs: Path, seed: int, extra: list[str], name: str) -> dict:
    study = out / "study"
    code = streameval("abort-backtest", "--tune", str(study / f"{name}.toml"), str(runs),
                      "--outcomes", str(logs), "--seed", str(seed), "--json",
                      str(study / f"{name}.json"), *extra)
    data = json.loads((study / f"{name}.json").read_text())
    data["exit"] = code
    return data


def pick_row(seed: int, data: dict) -> str:
    p = data["pick"]
    s = data["split"]
    if p is None:
        return f"| {seed} | {s['train_runs']}/{len(s['train'])} | {s['test_runs']}/{len(s['test'])} | none | | | | |"
    t = p["test"]
    j = t["judged"]
    return (f"| {seed} | {s['train_runs']} runs / {len(s['train'])} | {s['test_runs']} runs / "
            f"{len(s['test'])} | `{p['policy']}` | {100 * p['train']['saved_on_failed_share']:.1f}% / "
            f"{100 * p['train']['lost_share']:.1f}% | {iv(t.get('saved_on_failed_interval'), True)} | "
            f"{iv(t.get('lost_interval'), True)} ({j['lost']} of {j['resolved']}) | "
            f"{iv(t.get('saved_interval'), True)} |")


def front_rows(data: dict, kind: str) -> list[str]:
    rows = ["| policy | held-out saved on failed runs | held-out saved (all runs) | held-out lost |",
            "|---|---|---|---|"]
    for c in data["fronts"].get(kind, []):
        t = c["test"]
        rows.append(f"| `{c['policy']}` | {iv(t.get('saved_on_failed_interval'), True)} | "
                    f"{iv(t.get('saved_interval'), True)} | {iv(t.get('lost_interval'), True)} |")
    return rows


def gold_runs(out: Path) -> Path:
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    folder = out / "gold_runs"
    for r in records:
        if r.get("gold_source"):
            d = folder / r["instance_id"]
            if not d.exists():
                d.mkdir(parents=True)
                for f in (out / "runs" / r["instance_id"]).iterdir():
                    os.link(f, d / f.name)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="outcomes_real.py's folder")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    args = ap.parse_args()
    out = args.out.resolve()
    (out / "study").mkdir(exist_ok=True)
    logs = next(out.glob("src/swebench_results/*/logs"))
    streameval("outcomes", str(out / "records.jsonl"), "--steps", "5,10,20,40", "--json",
               str(out / "study" / "outcomes.json"), "--html", str(out / "study" / "outcomes.html"))
    data = json.loads((out / "study" / "outcomes.json").read_text())
    lines = ["### AUROC for failure, gold-free signals (95% intervals, repositories as units; "
             "* : a reason not to trust it)", "", *auroc_table(data, GOLD_FREE), "",
             "### AUROC for failure, gold signals (192 runs with gold)", "",
             *auroc_table(data, GOLD), ""]
    seeds = [int(s) for s in args.seeds.split(",")]
    free = {s: tune(out, out / "runs", logs, s, [], f"tuned-s{s}") for s in seeds}
    lines += ["### Tuned gold-free policies, --max-lost 0.02, spend in tokens, one split per seed",
              "", "| seed | training | held out | pick | training saved / lost | held-out saved on "
              "failed runs | held-out lost | held-out saved (all runs) |",
              "|---|---|---|---|---|---|---|---|", *(pick_row(s, d) for s, d in free.items()), "",
              f"### Plain step limits on the held-out runs (seed {seeds[0]})", "",
              *front_rows(free[seeds[0]], "max_steps"), ""]
    gold_extra = ["--gold", str(CONTEXTBENCH), "--gold-from-patch",
                  str(out / "reference_patches.jsonl"), "--repos", str(out / "repos")]
    with_gold = tune(out, gold_runs(out), logs, seeds[0], gold_extra, "tuned-gold")
    lines += [f"### With gold: the 192 runs measured against gold, every kind (seed {seeds[0]})",
              "", "| seed | training | held out | pick | training saved / lost | held-out saved on "
              "failed runs | held-out lost | held-out saved (all runs) |",
              "|---|---|---|---|---|---|---|---|", pick_row(seeds[0], with_gold), ""]
    for kind in ("stagnation", "precision", "reread_share"):
        lines += [f"{kind}:", "", *front_rows(with_gold, kind), ""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
