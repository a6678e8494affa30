#!/usr/bin/env python3
"""streameval against the public ContextBench evaluator, record by record.

    python scripts/oracle_parity.py --oracle ../shared/oracle [--fuzz 20] [--seed 1]
        [--streameval PYTHON] [--work DIR] [--keep]

Needs the evaluator set up offline (``bash ../shared/oracle/setup.sh``: it fetches nothing,
but the repository snapshots must already be on the machine). CI cannot do that, so this is
a script, not a test.

Prediction sets, all in the evaluator's unified format:

- the evaluator's own examples (``oracle/examples/*.pred.json*``);
- ``--fuzz`` batches: each holds one random record per runnable instance, drawn from the
  shapes real predictions take and the corners of the rules (empty steps, no steps,
  reversed, zero and past-the-end ranges, container-prefixed and missing paths, symbol
  names, step-only context, model patches deleting random lines, empty patches).

Each set is scored by the evaluator (``run_oracle.sh``) and by ``streameval replay`` (the
interpreter given by ``--streameval``, default this one). Records are compared in input
order, every number of the evaluator's record (final, trajectory, EditLoc) within 1e-9.
Where a prediction has no model patch the evaluator scores the gold patch and streameval
writes no EditLoc (a documented difference): EditLoc is then left out of the comparison.
The report gives identical records per set and, for the rest, which fields differ.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

GOLD = Path("/tmp/oracle-data/verified_test.gold.jsonl")
RUNNABLE = Path("/tmp/oracle-data/runnable.tsv")
WORKTREES = Path("/tmp/oracle-worktrees/contextbench_worktrees")
REPOS = Path("/tmp/oracle-repos")
TOL = 1e-9
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|fn|func|struct|interface|impl)\s+"
                  r"(?:\([^)]*\)\s*)?([A-Za-z_]\w*)", re.M)


# ----------------------------------------------------------------------------- inputs


def gold_rows() -> dict[str, dict]:
    rows = {}
    for line in GOLD.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        rows[d["original_inst_id"]] = d
    return rows


def runnable() -> list[str]:
    names = []
    for line in RUNNABLE.read_text().splitlines():
        first = line.split("\t")[0].strip()
        if first and not first.startswith("#") and "__" in first:
            names.append(first)
    return names


def worktree(row: dict) -> Path | None:
    m = re.match(r"^([\w.-]+)__([\w.-]+)-\d+$", row["original_inst_id"])
    if m is None:
        return None
    wt = WORKTREES / f"__tmp__oracle-repos__github.com__{m.group(1)}__{m.group(2)}" / row["commit"]
    return wt if wt.is_dir() else None


def gold_path(p: str) -> str:
    """The evaluator's gold path rule (its README, section 7), to find the files."""
    p = p.replace("\\", "/")
    if p.startswith("/testbed/"):
        return p[len("/testbed/"):]
    if p.startswith("/workspace/"):
        parts = p[len("/workspace/"):].split("/", 1)
        return parts[1] if len(parts) == 2 else parts[0]
    return p.lstrip("./") if not p.startswith("/") else p.lstrip("/")


class Instance:
    """What the generator needs of one instance: its files, their lengths and names."""

    def __init__(self, row: dict, wt: Path, rng: random.Random):
        self.id = row["original_inst_id"]
        self.gold = sorted({gold_path(x["file"]) for x in row["gold_ctx"]
                            if (wt / gold_path(x["file"])).is_file()})
        others: set[str] = set()
        for f in self.gold:
            d = (wt / f).parent
            for p in sorted(d.iterdir()):
                rel = str(p.relative_to(wt))
                # a worktree's .git is a file, to the evaluator a repository file too: an
                # artefact of how it checks out, no prediction's concern
                if p.name == ".git":
                    continue
                if p.is_file() and rel not in self.gold and p.suffix == Path(f).suffix:
                    others.add(rel)
        self.other = rng.sample(sorted(others), min(3, len(others)))
        self.lines: dict[str, int] = {}
        self.names: dict[str, list[str]] = {}
        for f in self.gold + self.other:
            text = (wt / f).read_text(encoding="utf-8", errors="replace")
            self.lines[f] = max(1, text.count("\n"))
            self.names[f] = sorted(set(_DEF.findall(text)))[:40]
        self.patch = row.get("patch") or ""


# ----------------------------------------------------------------------------- records


class Fuzzer:
    """Random unified records for one instance, in the shapes the rules have corners for."""

    def __init__(self, inst: Instance, rng: random.Random):
        self.inst, self.rng = inst, rng
        self.files = inst.gold + inst.other

    def path(self, f: str) -> str:
        r = self.rng.random()
        if r < 0.15:
            return f"/testbed/{f}"
        if r < 0.25:
            return f"./{f}"
        if r < 0.3:
            return f"/workspace/{self.inst.id}__0.1/{f}"
        return f

    def span(self, f: str) -> dict:
        rng, n = self.rng, self.inst.lines[f]
        r = rng.random()
        if r < 0.05:     # reversed
            return {"start": rng.randint(n // 2 + 1, n), "end": rng.randint(1, n // 2 + 1)}
        if r < 0.08:     # from line 0
            return {"start": 0, "end": rng.randint(1, 20)}
        if r < 0.12:     # past the end
            return {"start": rng.randint(max(1, n - 10), n), "end": n + rng.randint(1, 30)}
        a = rng.randint(1, n)
        return {"start": a, "end": min(n, a + rng.randint(0, 150))}

    def step(self) -> dict:
        rng = self.rng
        if rng.random() < 0.08:
            return {"files": [], "spans": {}}
        chosen = rng.sample(self.files, rng.randint(1, min(3, len(self.files))))
        out: dict = {"files": [], "spans": {}}
        for f in chosen:
            p = self.path(f)
            if rng.random() < 0.9:
                out["files"].append(p)
            if rng.random() < 0.85:
                out["spans"][p] = [self.span(f) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.15:
            f = rng.choice(chosen)
            names = self.inst.names.get(f) or ["missing_name"]
            out["symbols"] = {self.path(f): rng.sample(names, min(len(names), rng.randint(1, 3)))}
        if rng.random() < 0.05:
            out["files"].append("no/such/file.py")
        return out

    def record(self) -> dict:
        rng = self.rng
        steps = [self.step() for _ in range(rng.randint(0, 12))]
        traj: dict = {}
        if steps and rng.random() < 0.9:
            traj["pred_steps"] = steps
        if rng.random() < 0.92 or not steps:
            traj.update(self.final(steps[-4:] or [self.step()]))
        r = rng.random()
        patch = self.inst.patch if r < 0.3 else deleting_patch(self.inst, rng) if r < 0.75 else ""
        return {"instance_id": self.inst.id, "traj_data": traj, "model_patch": patch}

    def final(self, steps: list[dict]) -> dict:
        spans: dict = {}
        for s in steps:
            for f, ss in s["spans"].items():
                spans.setdefault(f, []).extend(ss)
        out = {"pred_files": sorted({f for s in steps for f in s["files"]}), "pred_spans": spans}
        if self.rng.random() < 0.1:
            f = self.rng.choice(self.inst.gold)
            out["pred_symbols"] = {f: (self.inst.names.get(f) or ["x"])[:2]}
        return out


def deleting_patch(inst: Instance, rng: random.Random) -> str:
    """A unified diff that deletes a few lines of one or two files (text is not checked
    by EditLoc: only the old line numbers of '-' lines)."""
    out = []
    for f in rng.sample(inst.gold + inst.other, min(2, len(inst.gold + inst.other))):
        n = inst.lines[f]
        a = rng.randint(1, max(1, n - 6))
        k = rng.randint(1, 4)
        out += [f"diff --git a/{f} b/{f}", f"--- a/{f}", f"+++ b/{f}",
                f"@@ -{a},{k + 1} +{a},2 @@", " context"]
        out += [f"-removed {i}" for i in range(k)]
        out += ["+added"]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- runs


def oracle_run(oracle: Path, pred: Path, out: Path) -> list[dict]:
    subprocess.run(["bash", str(oracle / "run_oracle.sh"), str(pred), str(out)], check=True,
                   capture_output=True)
    return [json.loads(x) for x in out.read_text().splitlines() if x.strip()]


def ours_run(python: str, pred: Path, out: Path) -> list[dict]:
    repo_root = Path(__file__).resolve().parent.parent
    # exit 1 says some records are error records (the edge cases hold bad predictions on
    # purpose): those are compared with the evaluator's errors below; 2 is a usage error
    done = subprocess.run([python, "-m", "streameval", "replay", str(pred), "--gold", str(GOLD),
                           "--repos", str(REPOS), "--out", str(out), "--quiet"],
                          capture_output=True, cwd=repo_root, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"streameval replay {pred}: exit {done.returncode}: {done.stderr[-2000:]}")
    return [json.loads(x) for x in out.read_text().splitlines() if x.strip()]


def differences(o: dict, u: dict, skip_editloc: bool) -> list[str]:
    """Dotted paths where our record differs from the evaluator's."""
    if "error" in o or "error" in u:
        # ours is "<reason>: <what to do>"; the reason is the evaluator's word
        mine = str(u.get("error") or "").split(":", 1)[0] or None
        return [] if o.get("error") == mine else [f"error:{o.get('error')}|{mine}"]
    diffs: list[str] = []
    keys = ["num_steps", "final", "trajectory"] + ([] if skip_editloc else ["editloc"])

    def walk(a, b, where: str) -> None:
        if isinstance(a, dict):
            if not isinstance(b, dict):
                diffs.append(where)
                return
            for k, v in a.items():
                walk(v, b.get(k), f"{where}.{k}")
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                diffs.append(where + "[len]")
                return
            for x, y in zip(a, b):
                walk(x, y, where + "[]")
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            if not isinstance(b, (int, float)) or abs(a - b) > TOL:
                diffs.append(where)
    for k in keys:
        if k in o:
            walk(o[k], u.get(k), k)
    if skip_editloc and "editloc" in u:
        diffs.append("editloc(present without a model patch)")
    return diffs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--oracle", type=Path, required=True, help="the shared oracle folder")
    p.add_argument("--fuzz", type=int, default=20, help="random batches (one record per instance)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--streameval", default=sys.executable, help="python that runs streameval")
    p.add_argument("--work", type=Path, help="keep inputs and outputs here")
    p.add_argument("--json", type=Path, help="also write the figures as JSON")
    a = p.parse_args()
    if not GOLD.exists():
        print("the evaluator is not set up: bash ORACLE/setup.sh", file=sys.stderr)
        return 2
    work = a.work or Path(tempfile.mkdtemp(prefix="oracle-parity-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    rows = gold_rows()
    insts = []
    for name in runnable():
        wt = worktree(rows[name]) if name in rows else None
        if wt is not None:
            insts.append(Instance(rows[name], wt, rng))
    sets: list[tuple[str, Path]] = []
    for ex in sorted((a.oracle / "examples").glob("*.pred.json*")):
        if not ex.name.startswith("empty_gold"):   # needs its own gold file
            sets.append((ex.name, ex))
    for k in range(a.fuzz):
        batch = work / f"fuzz{k:03d}.pred.jsonl"
        batch.write_text("".join(json.dumps(Fuzzer(i, rng).record()) + "\n" for i in insts))
        sets.append((batch.name, batch))
    total = same = 0
    areas: Counter[str] = Counter()
    differing: list[tuple[dict, dict]] = []
    per_set = {}
    for name, pred in sets:
        records = [json.loads(x) for x in pred.read_text().splitlines() if x.strip()] \
            if pred.suffix == ".jsonl" else _as_list(json.loads(pred.read_text()))
        o = oracle_run(a.oracle, pred, work / f"{name}.oracle.jsonl")
        u = ours_run(a.streameval, pred, work / f"{name}.ours.jsonl")
        if len(o) != len(u):
            print(f"{name}: {len(o)} evaluator records, {len(u)} ours")
            continue
        ok = 0
        for rec, x, y in zip(records, o, u):
            d = differences(x, y, not rec.get("model_patch"))
            total += 1
            if d:
                areas.update({".".join(q.split(".")[:2]) for q in d})
                differing.append((rec, y))
            else:
                ok += 1
        same += ok
        per_set[name] = [ok, len(o)]
        print(f"{name}: {ok}/{len(o)} identical", flush=True)
    print(f"records identical to the public evaluator: {same}/{total}")
    for k, v in areas.most_common():
        print(f"  differing in {k}: {v}")
    explained = explain(a.oracle, work, differing)
    print(f"of the {total - same} that differ, {explained} are identical to the evaluator's "
          "once their input is read by a documented rule (docs/metrics.md §4b: reversed "
          "ranges swapped); "
          f"unexplained: {total - same - explained}")
    if a.json:
        a.json.write_text(json.dumps({"identical": same, "total": total, "sets": per_set,
                                      "areas": dict(areas), "explained": explained},
                                     indent=1))
    return 0 if same + explained == total else 1


def documented(rec: dict) -> dict | None:
    """The record as the evaluator must read it to mean what streameval's documented
    rules make of it (docs/metrics.md §4b), or None when no such rule applies: reversed
    ranges swapped (the evaluator counts them as negative line counts)."""
    traj = json.loads(json.dumps(rec.get("traj_data") or {}))
    changed = False

    def fix(spans: dict) -> None:
        nonlocal changed
        for ranges in spans.values():
            for r in ranges if isinstance(ranges, list) else []:
                if isinstance(r, dict) and isinstance(r.get("start"), int) \
                        and isinstance(r.get("end"), int) and r["start"] > r["end"]:
                    r["start"], r["end"] = r["end"], r["start"]
                    changed = True

    for step in traj.get("pred_steps") or []:
        fix(step.get("spans") or {})
    fix(traj.get("pred_spans") or {})
    return {**rec, "traj_data": traj} if changed else None


def explain(oracle: Path, work: Path, differing: list[tuple[dict, dict]]) -> int:
    """How many differing records the evaluator agrees with once their input says what
    the documented rules make of it (one more evaluator run)."""
    pairs = [(documented(rec), ours) for rec, ours in differing]
    pairs = [(rec, ours) for rec, ours in pairs if rec is not None]
    if not pairs:
        return 0
    pred = work / "documented.pred.jsonl"
    pred.write_text("".join(json.dumps(rec) + "\n" for rec, _ in pairs))
    o = oracle_run(oracle, pred, work / "documented.oracle.jsonl")
    return sum(not differences(x, ours, not rec.get("model_patch"))
               for (rec, ours), x in zip(pairs, o))


def _as_list(doc) -> list[dict]:
    return doc if isinstance(doc, list) else [doc]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
