"""Reading real agents: the mini-swe-agent corpus, credited lines checked against the text.

For every trajectory of the public corpus (gruckion/mini-swe-agent, Gemini 3 Pro on
SWE-bench Verified, 500 runs) whose repository snapshot is on this machine, each tool
call is read twice over a real ``git cat-file`` view of the instance's base commit:

- **aligned**, as streameval reads it (``reading.credit``): the shown text decides;
- **by window**, the baseline a reader has that trusts the commands (the window each
  command asked for, mapped through the edits it could follow).

For every numbered or windowed read the credited base lines are compared with the text
the call printed: the share of credited lines whose base text equals the shown text,
for both readers, with the rest counted by cause. It also reports calls/s of the aligned
reader (parsing, shell analysis, alignment, edit map), one process.

    python benchmarks/bench_reading.py --corpus "$STREAMEVAL_MIRRORS/gruckion+mini-swe-agent/repo" \\
        --mirrors "$STREAMEVAL_MIRRORS" [--limit N] [--json out.json]

``--corpus`` is the corpus repository's git directory; ``--mirrors`` holds
``<owner>+<name>/repo`` git directories (the layout ``fetch`` brings). Base commits come
from ``benchmarks/data/swebench_verified_base_commits.tsv``.

**Per kind of call** (``--kinds``): what one tool call costs the whole replay (adapter,
reading, state, session), call kind by call kind, on the live benchmark's repository and
calls (``bench_live.CallPool``: a Claude ``Read`` window, ``Grep`` content, ``grep -n``
and ``sed -n`` through ``Bash``, ``cat`` of a whole file, an ``Edit``, and the live mix),
for this checkout and, with ``--old REV``, an older one, alternating within each round:

    python benchmarks/bench_reading.py --kinds [--calls 1000] [--rounds 3] [--old f53415f]
    python benchmarks/bench_reading.py --kinds --instructions --old f53415f

Each version replays each kind's trace in a process of its own (``evaluate_trace``, after a
warm-up trace that fills the caches); the figure is CPU time per call, the best of
``--repeat``. ``--instructions`` counts instructions instead (``valgrind --tool=cachegrind``,
a trace of ``--calls`` and one of three times as many, the difference per extra call):
slow, but the same figure on a busy machine as on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from machine import describe
from truth.sources import mirror_for

from streameval.model import Read, ToolCall
from streameval.reading.steps import StepBuilder
from streameval.sources.basetext import BaseText, BaseTexts, norm
from streameval.sources.repo import GitRepo
from streameval.traces.formats.miniswe import MiniSweAdapter

HERE = Path(__file__).resolve().parent
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"


def base_commits() -> dict[str, str]:
    out = {}
    for line in (HERE / "data" / "swebench_verified_base_commits.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            iid, sha = line.split("\t")
            out[iid] = sha
    return out


def git(gitdir: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], check=True,
                          capture_output=True).stdout


class Audit:
    """Counts credited lines against the shown text."""

    def __init__(self) -> None:
        self.c: Counter[str] = Counter()

    def __call__(self, repo: str, read: Read, lines: list[str], ids: list, base: BaseText):
        shown = read.shown
        checked = shown.numbers is not None or (read.start is not None and not shown.gaps)
        key = "numbered" if checked else "text"
        for j, (text, b) in enumerate(zip(lines, ids)):
            self.c[f"{key}_shown"] += 1
            if b is None:
                self.c[f"{key}_agent" if not shown.loose else f"{key}_loose_unmatched"] += 1
                continue
            self.c[f"{key}_credited"] += 1
            if base.line(b) == norm(text):
                self.c[f"{key}_equal"] += 1
            elif (j == 0 and shown.cut_head) or (j == len(lines) - 1 and shown.cut_tail):
                self.c[f"{key}_cut_edge"] += 1
            else:
                self.c[f"{key}_differs"] += 1


def window_check(c: Counter, builder: StepBuilder, call: ToolCall, out) -> None:
    """The baseline's credit of numbered/windowed reads against their text."""
    from streameval.reading.infer import infer

    for read in infer(call, builder.state).reads:
        shown = read.shown
        if shown is None or read.listing or shown.gaps or not shown.lines:
            continue
        if shown.numbers is None and (read.start is None or read.start < 1):
            continue
        c["window_reads"] += 1
        repo, _ = builder.paths.lookup(read.path, call.cwd, count=False)
        if repo is None or builder.view is None:
            continue
        base = builder.creditor.texts.get(builder.view, repo)
        if base is None:
            continue
        numbers = list(shown.numbers) if shown.numbers else list(
            range(read.start, read.start + len(shown.lines)))
        for n, text in zip(numbers, shown.lines):
            got = builder.edits.base_of(repo, n, 1)[0]
            c["window_lines"] += 1
            if got is not None and base.line(got) == norm(text):
                c["window_equal"] += 1


def run(args: argparse.Namespace) -> dict:
    commits = base_commits()
    names = git(args.corpus, "ls-tree", "-r", "--name-only", "HEAD", TRAJS).decode().split()
    trajs = sorted(n for n in names if n.endswith(".traj.json"))
    texts = BaseTexts()
    repos: dict[Path, GitRepo] = {}
    audit = Audit()
    base_c: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    seconds = 0.0
    per_repo: Counter[str] = Counter()
    for name in trajs:
        iid = Path(name).parent.name
        mirror = mirror_for(args.mirrors, iid)
        if iid not in commits or mirror is None:
            totals["skipped_no_repo"] += 1
            continue
        if args.limit and totals["instances"] >= args.limit:
            break
        if mirror not in repos:
            repos[mirror] = GitRepo(mirror)
        repo = repos[mirror]
        view = repo.at(commits[iid])
        adapter = MiniSweAdapter()
        data = git(args.corpus, "show", f"HEAD:{name}")
        for lineno, line in enumerate(data.split(b"\n"), 1):
            adapter.feed(line, lineno)
        calls = [e for e in adapter.close() if isinstance(e, ToolCall)]
        roots = [c.cwd for c in calls if c.cwd][:1] or ["/testbed"]
        totals["instances"] += 1
        per_repo[iid.split("__")[0]] += 1
        # timed: the reader as replay and watch run it (first, so the instance's base
        # texts are read inside the timing)
        timed = StepBuilder(view, roots=roots, texts=texts)
        t0 = time.perf_counter()
        for call in calls:
            timed.consume(call)
        seconds += time.perf_counter() - t0
        # audited: the same, every aligned read checked line by line (not timed)
        aligned = StepBuilder(view, roots=roots, texts=texts)
        aligned.creditor.audit = audit
        for call in calls:
            out = aligned.consume(call)
            totals["calls"] += 1
            totals["steps"] += out.step is not None
            totals["edits_found_by_reading"] += len(out.found_edits)
            for r in out.reads:
                totals["lines_aligned"] += r.aligned
                totals["lines_agent"] += r.agent
                totals["lines_unaligned"] += r.unaligned
        baseline = StepBuilder(view, roots=roots, texts=texts)
        baseline.creditor.window_only = True
        for call in calls:
            window_check(base_c, baseline, call, None)
            baseline.consume(call)
    for repo in repos.values():
        repo.close()
    return {"machine": describe(), "totals": dict(totals), "audit": dict(audit.c),
            "baseline": dict(base_c), "per_repo": dict(per_repo),
            "seconds": round(seconds, 3),
            "calls_per_second": round(totals["calls"] / seconds, 1) if seconds else None}


def report(r: dict) -> str:
    t, a, b = r["totals"], r["audit"], r["baseline"]
    num_cred = a.get("numbered_credited", 0)
    lines = [
        f"machine: {r['machine']}",
        f"instances: {t.get('instances', 0)} (skipped, no repository here: "
        f"{t.get('skipped_no_repo', 0)}); per repo {r['per_repo']}",
        f"tool calls: {t.get('calls', 0)}, steps {t.get('steps', 0)}, edits found by reading "
        f"{t.get('edits_found_by_reading', 0)}",
        f"shown lines: aligned {t.get('lines_aligned', 0)}, agent's own "
        f"{t.get('lines_agent', 0)}, window-only {t.get('lines_unaligned', 0)}",
        "numbered/windowed reads, credited lines whose base text equals the shown text:",
        f"  aligned : {a.get('numbered_equal', 0)} / {num_cred} = "
        f"{100 * a.get('numbered_equal', 0) / max(num_cred, 1):.3f}%  (cut edge "
        f"{a.get('numbered_cut_edge', 0)}, differs {a.get('numbered_differs', 0)}; shown "
        f"lines not credited: agent's own {a.get('numbered_agent', 0)}, loose "
        f"{a.get('numbered_loose_unmatched', 0)})",
        f"  baseline: {b.get('window_equal', 0)} / {b.get('window_lines', 0)} = "
        f"{100 * b.get('window_equal', 0) / max(b.get('window_lines', 1), 1):.3f}% "
        f"(the window each command asked for, mapped through the edits it could follow)",
        f"unnumbered text (grep hits, sed /re/ ranges, python prints): credited "
        f"{a.get('text_credited', 0)} of {a.get('text_shown', 0)} shown, equal "
        f"{a.get('text_equal', 0)}, cut edge {a.get('text_cut_edge', 0)}",
        f"speed: {t.get('calls', 0)} calls in {r['seconds']} s = {r['calls_per_second']} "
        "calls/s (aligned reader, one process)",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- per kind

WARM = 50   # calls of the warm-up trace (caches of the repository, symbols, texts)


def kinds_setup(work: Path, calls: list[int]) -> None:
    """The live benchmark's repository and gold, and a trace per kind and size (and a
    warm-up trace of each kind), written once for every version to read."""
    from bench_live import KINDS, CallPool, init_line, make_setup

    repo, _gold = make_setup(work)
    for kind in ("mix", *KINDS):
        pool = CallPool(repo, kind=None if kind == "mix" else kind)
        for n in (WARM, *calls):
            first = 10_000 if n == WARM else 0   # the warm-up: other calls of the pool
            (work / f"{kind}-{n}.jsonl").write_bytes(init_line() + b"".join(
                pool.call(first + k, f"c{k}") for k in range(n)))


def kinds_child(work: Path, kinds: list[str], n: int, repeat: int) -> dict[str, float]:
    """CPU seconds per call of each kind's trace (best of ``repeat``), this process's
    streameval (run with ``--kinds-child``, in the version under test)."""
    from bench_live import INSTANCE

    from streameval.runs.evaluate import evaluate_trace
    from streameval.runs.resources import load_resources

    res = load_resources(str(work / "gold.jsonl"), None, str(work / "repo"))
    out = {}
    for kind in kinds:
        evaluate_trace(work / f"{kind}-{WARM}.jsonl", res, instance=INSTANCE)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            records = evaluate_trace(work / f"{kind}-{n}.jsonl", res, instance=INSTANCE)
            best = min(best, time.process_time() - t0)
        assert "error" not in records[0], records[0]
        out[kind] = best / n
    return out


def _instructions(version, work: Path, kind: str, n: int) -> int:
    """Instructions of a child that replays the warm-up and one trace of ``n`` calls."""
    args = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
            version.python, str(HERE / "bench_reading.py"), "--kinds-child", str(work),
            "--only", kind, "--calls", str(n), "--repeat", "1"]
    done = subprocess.run(args, cwd=version.checkout, env={**version.env, "PYTHONHASHSEED": "0"},
                          capture_output=True, text=True, check=True)
    refs = next(ln for ln in done.stderr.splitlines() if "I   refs" in ln)
    return int(refs.split()[-1].replace(",", ""))


def kinds(args: argparse.Namespace) -> dict:
    """Every kind, every version, alternating within each round."""
    from bench_live import KINDS
    from older import head, label, versions

    names = ["mix", *KINDS]
    work = Path(tempfile.mkdtemp(prefix="bench-kinds-"))
    big = 3 * args.calls
    kinds_setup(work, [args.calls, big] if args.instructions else [args.calls])
    vs = versions(args)
    result: dict = {"machine": describe(), "calls": args.calls, "new": head(),
                    "old": label(args), "unit": "instructions" if args.instructions
                    else "cpu seconds", "rounds": []}
    for v in vs:   # a first run writes each version's bytecode cache: no compiling is counted
        v.run([str(HERE / "bench_reading.py"), "--kinds-child", str(work), "--only", "mix",
               "--calls", str(args.calls), "--repeat", "1"], capture_output=True, check=True)
    for r in range(1 if args.instructions else args.rounds):
        got: dict[str, dict[str, float]] = {}
        for v in (vs if r % 2 == 0 else vs[::-1]):
            if args.instructions:
                got[v.name] = {k: (_instructions(v, work, k, big) - _instructions(v, work, k, args.calls))
                               / (big - args.calls) for k in names}
            else:
                out = v.run([str(HERE / "bench_reading.py"), "--kinds-child", str(work),
                             "--calls", str(args.calls), "--repeat", str(args.repeat)],
                            capture_output=True, text=True, check=True)
                got[v.name] = json.loads(out.stdout.strip().splitlines()[-1])
        result["rounds"].append(got)
        print(report_kinds(got, args.instructions), flush=True)
    return result


def report_kinds(got: dict[str, dict[str, float]], instructions: bool) -> str:
    unit = (lambda x: f"{x / 1e3:9.0f} k") if instructions else (lambda x: f"{x * 1e6:8.1f} us")
    lines = [f"{'kind':8}" + "".join(f"{v:>12}" for v in got) +
             ("    old/new" if "old" in got else "")]
    for kind in got["new"]:
        row = f"{kind:8}" + "".join(f"{unit(got[v][kind]):>12}" for v in got)
        if "old" in got:
            row += f"   {got['old'][kind] / got['new'][kind]:8.2f}"
        lines.append(row)
    return "\n".join(lines)


def main() -> int:
    from older import add_arguments

    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--corpus", type=Path)
    p.add_argument("--mirrors", type=Path)
    p.add_argument("--limit", type=int, default=0, help="at most N instances")
    p.add_argument("--json", type=Path, help="also write the figures as JSON")
    p.add_argument("--kinds", action="store_true", help="the cost of a call, kind by kind")
    p.add_argument("--calls", type=int, default=1000, help="(--kinds) calls per trace")
    p.add_argument("--rounds", type=int, default=3, help="(--kinds) rounds, versions alternating")
    p.add_argument("--repeat", type=int, default=3, help="(--kinds) replays of a trace, best taken")
    p.add_argument("--instructions", action="store_true",
                   help="(--kinds) count instructions (valgrind) instead of CPU time")
    add_arguments(p)
    p.add_argument("--kinds-child", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--only", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.kinds_child:
        from bench_live import KINDS
        names = [args.only] if args.only else ["mix", *KINDS]
        print(json.dumps(kinds_child(args.kinds_child, names, args.calls, args.repeat)))
        return 0
    if args.kinds:
        r = kinds(args)
    else:
        if not (args.corpus and args.mirrors):
            p.error("--corpus and --mirrors are needed (or --kinds)")
        r = run(args)
        print(report(r))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
