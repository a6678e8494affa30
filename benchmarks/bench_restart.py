"""Issue 31's scenario over many seeds: a restart changes nothing.

    python benchmarks/bench_restart.py [--seeds 1-20] [--runs fixture|oracle]
        [--oracle ORACLE] [--streameval CHECKOUT] [--work DIR] [--json OUT]

Six Claude Code runs are written into a watched directory while a real ``streameval
watch --out`` (default checkpoint, ``--patch-grace`` 30 s) follows them, every
``meta.json`` with the same ``run_id``, each ``patch.diff`` copied 0.2 s after its trace
ends, and the watcher is killed with SIGKILL at a random write and started again at once
(``tests/restart_scenario.py``; a seed decides when each run starts, the pace of its lines
and the moment of the kill). Per seed it reports the runs whose last record equals
``streameval replay`` of the finished files (every field but ``run_id``), the runs that
lost their EditLoc, and the runs seen under more than one id (the watchers' logs,
``/metrics``, the records, ``ABORT`` decisions).

``--runs fixture`` (the default) plays the test suite's runs: prefixes of the real Claude
Code trace of tests/fixtures over the repository of tests/agents/scenario.py; it needs
nothing beyond the checkout. ``--runs oracle`` plays six of the public evaluator's
runnable instances (``--oracle``, set up by its setup.sh), rendered as Claude Code traces
by ``rendered_claude.py``, each with a patch, and compares each last record with the
evaluator's numbers as well (final, trajectory, EditLoc). ``--streameval`` runs the
watchers and replay of another checkout (``git worktree add /tmp/base <commit>``) to
measure it before a change; the runs' ids are then judged by this checkout's rule.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
from restart_scenario import Run, check, fixture_runs, play, replayed  # noqa: E402

#: the issue's two runs and four more of the evaluator's runnable instances
ORACLE_INSTANCES = ("sveltejs__svelte-9962", "astropy__astropy-13579", "pydata__xarray-4075",
                    "cli__cli-5047", "sphinx-doc__sphinx-10449", "vuejs__core-10289")


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def _rendered():
    spec = importlib.util.spec_from_file_location("rendered_claude", HERE / "rendered_claude.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # type: ignore[union-attr]
    return mod


def oracle_runs(oracle: Path, work: Path) -> tuple[list[Run], list[str], dict[str, dict]]:
    """The evaluator's instances as rendered Claude Code runs (10 steps, seed 7), each with
    a patch replacing a few lines of a file it read; and the evaluator's records of the
    same predictions with those patches, by instance."""
    rc = _rendered()
    parity = rc.parity
    rows = parity.gold_rows()
    runs, preds = [], []
    for inst in ORACLE_INSTANCES:
        pred, texts = rc.prediction(oracle, inst, 10, 7, work, parity.worktree(rows[inst]))
        rng = random.Random(f"patch:{inst}")
        f = sorted(texts)[0]
        a = rng.randint(1, max(1, len(texts[f]) - 6))
        k = rng.randint(1, 3)
        patch = "\n".join([f"diff --git a/{f} b/{f}", f"--- a/{f}", f"+++ b/{f}",
                           f"@@ -{a},{k} +{a},1 @@", *(f"-{t}" for t in texts[f][a - 1:a - 1 + k]),
                           "+changed"]) + "\n"
        preds.append({**pred, "model_patch": patch})
        runs.append(Run(inst, inst, rc.render(inst, pred, texts, 7), patch))
    pred_file = work / "predictions.jsonl"
    pred_file.write_text("".join(json.dumps(p) + "\n" for p in preds))
    evaluator = {r["instance_id"]: r for r in parity.oracle_run(oracle, pred_file,
                                                                work / "oracle.jsonl")}
    return runs, ["--gold", str(parity.GOLD), "--repos", str(parity.REPOS)], evaluator


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--seeds", default="1-20", help="seeds, e.g. 1-20 or 3,5,8-9")
    p.add_argument("--runs", choices=("fixture", "oracle"), default="fixture")
    p.add_argument("--oracle", type=Path, help="the evaluator's folder (--runs oracle)")
    p.add_argument("--streameval", type=Path, help="another checkout's streameval to run")
    p.add_argument("--work", type=Path, help="keep every seed's files here (its seed-N "
                   "folders are made anew)")
    p.add_argument("--json", type=Path, help="write the figures as JSON")
    a = p.parse_args(argv)
    checkout = a.streameval.resolve() if a.streameval is not None else None
    work = a.work or Path(tempfile.mkdtemp(prefix="restart-scenario-"))
    work.mkdir(parents=True, exist_ok=True)
    evaluator: dict[str, dict] = {}
    if a.runs == "oracle":
        if a.oracle is None:
            p.error("--runs oracle needs --oracle (the evaluator's folder, set up)")
        runs, resources, evaluator = oracle_runs(a.oracle, work)
    else:
        runs, resources = fixture_runs(work / "fixture")
    rows = []
    for seed in _seeds(a.seeds):
        sw = work / f"seed-{seed}"
        shutil.rmtree(sw, ignore_errors=True)   # a seed's folder is made anew
        outcome = play(runs, sw, seed, resources, checkout)
        replay = replayed(sw / "runs", resources, sw / "replay.jsonl", checkout)
        wrong = check(outcome, replay)
        row = {"seed": seed, "killed_after": outcome.killed_after, "writes": outcome.writes,
               "seconds": round(outcome.seconds, 1),
               "runs_equal_replay": len(runs) - len({w.split(":")[0] for w in wrong["differ"]}),
               "runs_without_editloc": len(wrong["editloc"]), "runs_with_several_ids": len(wrong["ids"]),
               "problems": {k: v for k, v in wrong.items() if v}}
        if evaluator:
            rc = _rendered()
            last = {r["instance_id"]: r for r in outcome.records}
            row["runs_equal_evaluator"] = sum(
                1 for inst, o in evaluator.items()
                if inst in last and not rc.parity.differences(o, last[inst], False))
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {"runs": a.runs, "seeds": _seeds(a.seeds), "streameval": str(a.streameval or REPO),
               "seeds_all_equal": sum(1 for r in rows if r["runs_equal_replay"] == len(runs)),
               "seeds_with_editloc_lost": sum(1 for r in rows if r["runs_without_editloc"]),
               "seeds_with_a_run_under_two_ids": sum(1 for r in rows if r["runs_with_several_ids"]),
               "seconds_per_seed": round(sum(r["seconds"] for r in rows) / max(1, len(rows)), 1)}
    if evaluator:
        summary["seeds_all_equal_evaluator"] = sum(
            1 for r in rows if r["runs_equal_evaluator"] == len(runs))
    print(json.dumps(summary))
    if a.json:
        a.json.write_text(json.dumps({"summary": summary, "seeds": rows}, indent=1) + "\n")
    return 0 if summary["seeds_all_equal"] == len(rows) and not summary["seeds_with_editloc_lost"] \
        and not summary["seeds_with_a_run_under_two_ids"] else 1


if __name__ == "__main__":
    sys.exit(main())
