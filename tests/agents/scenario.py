"""The task every real agent is driven through, and what each of its calls showed.

One small repository (a module of eight functions, a long text file, a helper module),
one gold row over it, and the same plan for every agent, written in each agent's own
tools: reads by the agent's read tool and by the shell (``sed -n``, ``nl -ba | sed``,
``grep -n``, a directory grep, ``head``), a failing command, an edit by the agent's own
edit tool, an edit by a Python heredoc script that inserts three lines, reads after the
edits, and (where the CLI can be stopped mid-call) an interrupted call.

``EXPECTED`` is the truth, worked out by hand from the files and the plan: per scored
call, the base-commit lines it showed (``None``: the call showed no repository line), as
a harness that shows the output whole presents it; ``expected_for(agent)`` adds what each
agent's harness changes: the blank lines Claude Code and OpenHands' terminal trim from an
output's edges were printed but never shown (docs/metrics.md §6d), and the snippet
OpenHands' editor prints after its ``str_replace`` was shown (§6a).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gitrepo import make_repo, module_lines

from streameval.commands.main import main as streameval_main
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

INSTANCE = "demo__agents-1"


#: 1-2 header; eight functions of seven lines: alpha at 3, beta 10, gamma 17, delta 24,
#: eps 31, zeta 38, eta 45, theta 52 ("def", "value = x * N", ...)
MOD_LINES = module_lines()
MOD = "\n".join(MOD_LINES) + "\n"
UTIL = "def helper(x):\n    return x\n\n\ndef other(y):\n    return y\n"
BIG = "".join(f"line {i} of the big file\n" for i in range(1, 301))
DEF_LINES = [3 + 7 * i for i in range(8)]          # "def ..." lines of pkg/mod.py

#: the heredoc script: three lines inserted after line 9 (the blank line before beta)
SCRIPT = ("cat <<'EOF' > fix_mod.py\n"
          "p = 'pkg/mod.py'\n"
          "lines = open(p).readlines()\n"
          "lines[9:9] = ['X = 1\\n', 'Y = 2\\n', 'Z = 3\\n']\n"
          "open(p, 'w').writelines(lines)\n"
          "EOF\n"
          "python3 fix_mod.py")
#: the call the run is killed in (Claude Code refuses a bare ``sleep``)
WAIT = "python3 -c 'import time; time.sleep(30)'"
#: the agent's own edit: alpha's body (base line 4) changed
EDIT_OLD, EDIT_NEW = "    value = x * 2\n", "    value = x * 20\n"

#: base lines per call of the plan, in the order of the scored calls; None: nothing shown
#: (keys are call names used by the per-agent scripts)
EXPECTED: dict[str, dict[str, set[int]] | None] = {
    "read_head": {"pkg/mod.py": set(range(1, 13))},
    "sed_window": {"pkg/mod.py": set(range(30, 41))},
    "nl_window": {"pkg/mod.py": set(range(8, 13))},
    "grep_eps": {"pkg/mod.py": {31}},
    "grep_dir": {"pkg/mod.py": set(DEF_LINES), "pkg/util.py": {1, 5}},
    "missing": None,
    "own_edit": None,
    "script_edit": None,
    # after the insert: current 30-40 are base 27-37
    "sed_after": {"pkg/mod.py": set(range(27, 38))},
    # current 8-15: base 8-9, the three inserted lines (the agent's), base 10-12
    "read_after": {"pkg/mod.py": set(range(8, 13))},
    "head_big": {"pkg/big.txt": set(range(1, 6))},
}
#: shown lines with no base counterpart, per call
AGENT_LINES = {"read_after": 3}

#: blank lines a harness that trims its output's edges never showed: `sed -n '30,40p'`
#: starts with blank line 30; after the insert its output ends with blank 36-37
TRIMMED = {"sed_window": {"pkg/mod.py": {30}}, "sed_after": {"pkg/mod.py": {36, 37}}}
#: the agents whose harness trims them (Claude Code's Bash tool; OpenHands' pty)
TRIMS = ("claude-code", "openhands-sdk")
#: what OpenHands' editor printed after its own str_replace: a snippet of current 1-9,
#: base 1-3 and 5-9 around the changed line 4 (the agent's)
SNIPPETS = {"openhands-sdk": {"own_edit": {"pkg/mod.py": {1, 2, 3, 5, 6, 7, 8, 9}}}}


def expected_for(agent: str) -> dict[str, dict[str, set[int]] | None]:
    """``EXPECTED`` as the agent's harness showed it (see the module docstring)."""
    out = dict(EXPECTED)
    if agent in TRIMS:
        for name, hidden in TRIMMED.items():
            out[name] = {p: lines - hidden.get(p, set()) for p, lines in EXPECTED[name].items()}
    out.update(SNIPPETS.get(agent, {}))
    return out


def agent_lines(agent: str) -> int:
    """Shown lines of the whole run with no base counterpart: the three inserted lines
    the last read shows, and the changed line 4 in OpenHands' edit snippet."""
    return AGENT_LINES["read_after"] + (1 if agent in SNIPPETS else 0)


def shown_count(plan: list[str], agent: str) -> int:
    """Base lines shown over the run, a line shown by two calls counted twice."""
    exp = expected_for(agent)
    return sum(len(lines) for name in plan if exp.get(name) for lines in exp[name].values())


@dataclass
class Setup:
    root: Path
    repo: Path
    gold: Path
    runs: Path
    home: Path
    sha: str
    run_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.run_dir = self.runs / INSTANCE
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "meta.json").write_text(json.dumps({"instance_id": INSTANCE}))

    def resources(self):
        return load_resources(str(self.gold), None, str(self.repo))


def make_setup(tmp: Path) -> Setup:
    repo = tmp / "repo"
    sha = make_repo(repo, {"pkg/mod.py": MOD, "pkg/util.py": UTIL, "pkg/big.txt": BIG})[0]
    gold = tmp / "gold.jsonl"
    gold.write_text(json.dumps({
        "instance_id": INSTANCE, "original_inst_id": INSTANCE, "repo": "demo/agents",
        "base_commit": sha, "language": "python",
        # eps (31-37), the inserted-around region (8-12), theta's body (53-58, never read)
        "init_ctx": [{"file": "pkg/mod.py", "start_line": 31, "end_line": 37},
                     {"file": "pkg/mod.py", "start_line": 8, "end_line": 12},
                     {"file": "pkg/mod.py", "start_line": 53, "end_line": 58}],
        "add_ctx": [{"file": "pkg/util.py", "start_line": 1, "end_line": 2}]}) + "\n")
    home = tmp / "home"
    home.mkdir()
    return Setup(tmp, repo, gold, tmp / "runs", home, sha)


# ------------------------------------------------------------------ running a CLI


@dataclass
class Run:
    """A CLI run: its stdout lines as they came, and the live watcher's view."""

    returncode: int | None
    stdout: list[str]
    stderr: str
    watched: dict | None


def run_cli(argv: list[str], env: dict[str, str], cwd: Path, setup: Setup,
            stdout_trace: Path | None = None, kill_when: str | None = None,
            watch: bool = True, timeout: float = 240.0) -> Run:
    """Run a CLI to its end (or kill it once a stdout line contains ``kill_when`` and
    the call has had a second to start), appending its stdout to ``stdout_trace`` line by
    line as it writes it, while a watcher follows ``setup.runs`` and scores it live."""
    watcher = Watcher(WatchConfig(root=setup.runs, idle_timeout=3600, patch_grace=0.0,
                                  rescan_interval=0.0), setup.resources()) if watch else None
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    lines: list[str] = []
    errors: list[str] = []
    err_thread = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
    err_thread.start()
    done = threading.Event()

    def reader() -> None:
        sink = stdout_trace.open("a", encoding="utf-8") if stdout_trace else None
        try:
            for line in proc.stdout:
                lines.append(line)
                if sink:
                    sink.write(line)
                    sink.flush()
                if kill_when and kill_when in line:
                    time.sleep(1.0)
                    os.killpg(proc.pid, signal.SIGKILL)
        finally:
            if sink:
                sink.close()
            done.set()

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not done.is_set() and time.monotonic() < deadline:
        if watcher is not None:
            watcher.scan()
            watcher.poll_all()
        time.sleep(0.05)
    if not done.is_set():
        os.killpg(proc.pid, signal.SIGKILL)
        done.wait(10)
    proc.wait(10)
    err_thread.join(5)
    proc.stdout.close()
    proc.stderr.close()
    watched = None
    if watcher is not None:
        watcher.scan()
        watcher.poll_all()
        # the CLI is gone (or was killed): the run ends as a watcher ends it, idle
        watcher.tick(now=time.time() + 2 * watcher.cfg.idle_timeout)
        runs = list(watcher.table.runs.values())
        watched = runs[0].session.record() if len(runs) == 1 else None
    return Run(proc.returncode, lines, "".join(errors), watched)


# ------------------------------------------------------------------ scoring


def inspected(trace: Path, setup: Setup, tmp: Path) -> dict:
    """``streameval inspect --json`` of a trace, with the repository and gold."""
    out = tmp / f"{trace.name}.inspect.json"
    rc = streameval_main(["inspect", str(trace), "--repo", str(setup.repo), "--gold",
                          str(setup.gold), "--instance", INSTANCE, "--first", "200",
                          "--quiet", "--json", str(out)])
    assert rc == 0
    (run,) = json.loads(out.read_text())["runs"]
    return run


def shown_by_call(run: dict) -> list[dict[str, set[int]]]:
    """Per scored call with reads, the base lines credited per file, in call order."""
    per: dict[int, dict[str, set[int]]] = {}
    for r in run["first_reads"]:
        lines = per.setdefault(r["call"], {}).setdefault(r["file"], set())
        for a, b in r.get("base") or []:
            lines.update(range(a, b + 1))
    return [per[k] for k in sorted(per)]


def expected_reads(plan: list[str], agent: str) -> list[dict[str, set[int]]]:
    exp = expected_for(agent)
    return [exp[name] for name in plan if exp.get(name)]


def replayed(trace: Path, setup: Setup) -> dict:
    (record,) = evaluate_trace(trace, setup.resources(), instance=INSTANCE)
    assert "error" not in record, record
    return record


def same_record(a: dict, b: dict) -> bool:
    """Equal but for what only one side can know: a watcher ends a killed run as idle."""
    skip = {"run_id", "ended_at", "started_at", "end_reason"}
    return {k: v for k, v in a.items() if k not in skip} == \
        {k: v for k, v in b.items() if k not in skip}
