"""Claude Code traces rendered from ContextBench predictions, with truth by construction.

    python benchmarks/rendered_claude.py --oracle ../shared/oracle [--steps 30] [--seed 7]
        [--watch] [--only INST,...] [--work DIR] [--json out.json]

For each of the oracle's runnable instances (``../shared/oracle/README.md``), a synthetic
prediction (``synth_pred.py INST N``, its ranges clamped to the files, its final context
the union of its steps) is rendered as the Claude Code stream-json trace of an agent that
read exactly those lines: one call per step, each showing exactly the lines its step
names, in the shapes agents use (issue 16):

- a Bash chain of the step's windows, in any order (falling windows of one file too),
  each part ``sed -n 'a,bp' f``, ``nl -ba f | sed -n 'a,bp'``, ``cat -n f | sed -n
  'a,bp'``, ``head -n b f`` or ``cat f``, joined by ``&&``, ``;`` or ``&& echo --- &&``,
  sometimes after ``cd /testbed &&``;
- a ``Read`` of a step with one window.

The output is what the command prints from the base commit's text, as Claude Code's Bash
tool shows it: trailing white space trimmed, and leading blank lines dropped, so a part
whose edge line would be a trimmed blank line is printed numbered (a numbered line is
never blank), and every step's lines are shown, no more.

streameval scores each trace (``replay``, and with ``--watch`` a real ``streameval watch``
the traces are written into live, killed with SIGKILL half way and restarted), and the
public evaluator (``run_oracle.sh``) scores the prediction itself: since the trace shows
exactly what the prediction names, the two must be equal, number for number (final and
trajectory, within 1e-9; EditLoc aside: there is no model patch). The report gives the
runs equal and, for the others, the fields that differ.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
_spec = importlib.util.spec_from_file_location("oracle_parity", REPO / "scripts" / "oracle_parity.py")
parity = importlib.util.module_from_spec(_spec)   # the evaluator's paths and comparison
_spec.loader.exec_module(parity)                   # type: ignore[union-attr]

CWD = "/testbed"


# ----------------------------------------------------------------------------- predictions


def prediction(oracle: Path, inst: str, steps: int, seed: int, work: Path,
               wt: Path) -> tuple[dict, dict[str, list[str]]]:
    """``synth_pred.py``'s prediction, each range clamped to its file (a window past the
    end shows only the file's lines), the final context the union of the steps (a trace's
    final context is what it showed); and the text of the files it reads."""
    raw = work / f"{inst}.synth.json"
    subprocess.run([sys.executable, str(oracle / "synth_pred.py"), inst, str(steps), str(raw),
                    "--seed", str(seed)], check=True, capture_output=True)
    pred = json.loads(raw.read_text())
    # files of the repository only: the evaluator's worktree also has its `.git` pointer,
    # which synth_pred may pick as a "non-gold file of the same directory"
    tracked = set(subprocess.run(["git", "-C", str(wt), "ls-files"], check=True,
                                 capture_output=True, text=True).stdout.split("\n"))
    texts = {f: file_lines(wt, f) for st in pred["traj_data"]["pred_steps"] for f in st["files"]
             if f in tracked}
    union: dict[str, list[dict]] = {}
    out_steps = []
    for st in pred["traj_data"]["pred_steps"]:
        spans: dict[str, list[dict]] = {}
        for f, ranges in st["spans"].items():
            if f not in texts:
                continue
            n = len(texts[f])
            for r in ranges:
                a, b = max(1, r["start"]), min(n, r["end"])
                if a <= b:
                    spans.setdefault(f, []).append({"start": a, "end": b})
                    union.setdefault(f, []).append({"start": a, "end": b})
        out_steps.append({"files": sorted(spans), "spans": spans})
    pred["traj_data"] = {"pred_steps": out_steps, "pred_files": sorted(union),
                         "pred_spans": union}
    return pred, texts


def file_lines(wt: Path, rel: str) -> list[str]:
    """A file's lines as a program prints them (no line end)."""
    text = (wt / rel).read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


# ----------------------------------------------------------------------------- rendering


def _blank(line: str) -> bool:
    return not line.strip()


def _part(rng: random.Random, f: str, a: int, b: int, lines: list[str],
          numbered: bool) -> tuple[str, str]:
    """(command, output) of one window printed by one of the usual commands."""
    n = len(lines)
    path = f if rng.random() < 0.8 else f"{CWD}/{f}"
    shown = lines[a - 1:b]
    if numbered or rng.random() < 0.3:
        cmd = rng.choice([f"nl -ba {path} | sed -n '{a},{b}p'",
                          f"cat -n {path} | sed -n '{a},{b}p'"])
        return cmd, "".join(f"{a + i:6d}\t{t}\n" for i, t in enumerate(shown))
    if a == 1 and b == n and rng.random() < 0.5:
        cmd = f"cat {path}"
    elif a == 1 and rng.random() < 0.5:
        cmd = f"head -n {b} {path}"
    else:
        cmd = f"sed -n '{a},{b}p' {path}"
    return cmd, "".join(t + "\n" for t in shown)


def render_step(rng: random.Random, step: dict, texts: dict[str, list[str]]
                ) -> tuple[str, dict, str]:
    """(tool, input, output Claude Code shows) of one step."""
    parts = [(f, r["start"], r["end"]) for f in step["files"] for r in step["spans"][f]]
    rng.shuffle(parts)
    if len(parts) == 1 and rng.random() < 0.25:
        f, a, b = parts[0]
        shown = texts[f][a - 1:b]
        out = "\n".join(f"{a + i:>6}→{t}" for i, t in enumerate(shown))
        return "Read", {"file_path": f"{CWD}/{f}", "offset": a, "limit": b - a + 1}, out
    cmds, outs = [], []
    for k, (f, a, b) in enumerate(parts):
        lines = texts[f]
        # Claude Code drops the output's leading blank lines and trailing white space:
        # a part whose edge line would go is printed numbered, so it is shown
        edge = (k == 0 and _blank(lines[a - 1])) or (k == len(parts) - 1 and _blank(lines[b - 1]))
        cmd, out = _part(rng, f, a, b, lines, edge)
        if k:
            joiner = rng.choice([" && ", "; ", " && echo --- && "])
            if "echo" in joiner:
                outs.append("---\n")
            cmds.append(joiner)
        cmds.append(cmd)
        outs.append(out)
    command = "".join(cmds)
    if rng.random() < 0.3:
        command = f"cd {CWD} && {command}"
    return "Bash", {"command": command, "description": "read"}, "".join(outs).rstrip()


def render(inst: str, pred: dict, texts: dict[str, list[str]], seed: int) -> list[bytes]:
    """The stream-json lines ``claude -p --output-format stream-json`` would write."""
    rng = random.Random(f"{seed}:{inst}")
    sid = f"rendered-{inst}"
    lines = [{"type": "system", "subtype": "init", "cwd": CWD, "session_id": sid,
              "tools": ["Read", "Bash"], "model": "claude-rendered"}]
    for k, step in enumerate(pred["traj_data"]["pred_steps"], 1):
        tool, inp, out = render_step(rng, step, texts)
        tid = f"toolu_{k:04d}"
        lines.append({"type": "assistant", "session_id": sid, "message": {
            "id": f"msg_{k}", "role": "assistant", "model": "claude-rendered",
            "content": [{"type": "tool_use", "id": tid, "name": tool, "input": inp}]}})
        lines.append({"type": "user", "session_id": sid, "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": out, "is_error": False}]}})
    lines.append({"type": "result", "subtype": "success", "is_error": False, "session_id": sid,
                  "num_turns": len(pred["traj_data"]["pred_steps"])})
    return [json.dumps(x).encode() for x in lines]


# ----------------------------------------------------------------------------- scoring


#: the checkout whose streameval scores the traces (``--streameval``: an older one to compare)
CODE = REPO


def replay(traces: Path, out: Path) -> dict[str, dict]:
    subprocess.run([sys.executable, "-m", "streameval", "replay", str(traces), "--gold",
                    str(parity.GOLD), "--repos", str(parity.REPOS), "--out", str(out),
                    "--quiet"], check=True, capture_output=True, cwd=CODE)
    return _by_instance(out)


def _by_instance(out: Path) -> dict[str, dict]:
    recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    return {r["instance_id"]: r for r in recs}


def watch_with_kill(traces: dict[str, list[bytes]], work: Path) -> dict[str, dict]:
    """The traces written live, a line at a time, into a real ``streameval watch``
    that is killed with SIGKILL once half of every trace is written (after its
    checkpoint has them), then restarted to see the rest."""
    runs = work / "live"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    out, cp = work / "live.jsonl", work / "live-checkpoint.json"
    for p in (out, cp):
        p.unlink(missing_ok=True)
    files = {}
    for inst in traces:
        d = runs / inst
        d.mkdir()
        (d / "meta.json").write_text(json.dumps({"instance_id": inst}))
        files[inst] = d / "trace.jsonl"
    proc = _start_watch(runs, out, cp, work)
    try:
        for inst, lines in traces.items():
            _write(files[inst], lines[:len(lines) // 2])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _checkpointed(cp, files):
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    for inst, lines in traces.items():
        _write(files[inst], lines[len(lines) // 2:])
    proc = _start_watch(runs, out, cp, work)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (
                not out.exists() or len(out.read_text().splitlines()) < len(traces)):
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return _by_instance(out)


def _write(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as fh:
        for ln in lines:
            fh.write(ln + b"\n")
            fh.flush()


def _checkpointed(cp: Path, files: dict[str, Path]) -> bool:
    try:
        seen = json.loads(cp.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return False
    return all(seen.get(str(p), {}).get("offset", -1) == p.stat().st_size for p in files.values())


def _start_watch(runs: Path, out: Path, cp: Path, work: Path) -> subprocess.Popen:
    log = work / f"watch-{int(time.time() * 1000)}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(parity.GOLD),
         "--repos", str(parity.REPOS), "--port", "0", "--out", str(out), "--checkpoint", str(cp),
         "--checkpoint-interval", "0.1", "--idle-timeout", "3600", "--patch-grace", "0"],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=CODE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b"serving metrics" not in log.read_bytes():
        if proc.poll() is not None:
            raise RuntimeError(f"watch exited: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc


def compare(oracle: dict[str, dict], ours: dict[str, dict]) -> dict[str, list[str]]:
    """Per instance, the fields where our record differs ([] when equal)."""
    return {inst: (parity.differences(o, ours[inst], True) if inst in ours else ["missing"])
            for inst, o in oracle.items()}


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--oracle", type=Path, required=True, help="the shared oracle folder")
    p.add_argument("--steps", type=int, default=30, help="steps per prediction")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--watch", action="store_true", help="also live into watch, with a kill -9")
    p.add_argument("--only", default="", help="comma-separated instance ids")
    p.add_argument("--work", type=Path, help="keep inputs and outputs here")
    p.add_argument("--json", type=Path, help="write the comparison as JSON")
    p.add_argument("--streameval", type=Path, default=REPO,
                   help="the checkout whose streameval scores the traces (default this one)")
    a = p.parse_args(argv)
    global CODE
    CODE = a.streameval.resolve()
    if not parity.GOLD.exists():
        print("the evaluator is not set up: bash ORACLE/setup.sh", file=sys.stderr)
        return 2
    work = a.work or Path(tempfile.mkdtemp(prefix="rendered-claude-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = parity.gold_rows()
    only = set(filter(None, a.only.split(",")))
    traces_dir = work / "traces"
    shutil.rmtree(traces_dir, ignore_errors=True)
    preds, traces = [], {}
    for inst in parity.runnable():
        wt = parity.worktree(rows[inst]) if inst in rows else None
        if wt is None or (only and inst not in only):
            continue
        pred, texts = prediction(a.oracle, inst, a.steps, a.seed, work, wt)
        preds.append(pred)
        lines = render(inst, pred, texts, a.seed)
        traces[inst] = lines
        d = traces_dir / inst
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"instance_id": inst}))
        (d / "trace.jsonl").write_bytes(b"".join(ln + b"\n" for ln in lines))
    pred_file = work / "predictions.jsonl"
    pred_file.write_text("".join(json.dumps(x) + "\n" for x in preds))
    oracle = {r["instance_id"]: r for r in parity.oracle_run(a.oracle, pred_file,
                                                             work / "oracle.jsonl")}
    result = {"instances": len(preds), "steps": a.steps, "seed": a.seed,
              "streameval": str(CODE)}
    diffs = compare(oracle, replay(traces_dir, work / "replay.jsonl"))
    result["replay"] = _report("replay", diffs)
    if a.watch:
        result["watch_kill9"] = _report("watch, killed with SIGKILL and restarted",
                                        compare(oracle, watch_with_kill(traces, work)))
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    print(f"work: {work}")
    ok = all(r["equal"] == r["runs"] for k, r in result.items() if isinstance(r, dict))
    return 0 if ok else 1


def _report(what: str, diffs: dict[str, list[str]]) -> dict:
    equal = sum(1 for d in diffs.values() if not d)
    print(f"{what}: {equal} of {len(diffs)} runs equal the public evaluator on the truth")
    for inst, d in diffs.items():
        if d:
            print(f"  {inst}: {', '.join(d[:8])}{' ...' if len(d) > 8 else ''}")
    return {"runs": len(diffs), "equal": equal, "differ": {k: v for k, v in diffs.items() if v}}


if __name__ == "__main__":
    sys.exit(main())
