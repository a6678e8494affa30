"""Every reading class of issue 16, end to end through replay and through watch.

One repository (``pkg/a.py``, ``pkg/b.py`` sharing blank lines and ``return None``, and a
long text file), one mini-swe-agent trajectory per class, and one gold row per run that
is exactly the base lines its calls showed, worked out by hand (``EXPECTED``). So a run
is read exactly right when, at each of the four granularities (file, symbol, span,
line), its final coverage and precision are both 1.0 with the intersection the whole
gold; a line credited in the wrong file or place, or one missed, breaks that. The base
lines of each call are checked too (``StepBuilder`` over the same trace), and ``watch``
must build the same record as ``replay``.

The classes: chained ``sed -n``/``cat``/``nl | sed`` reads over two files and over one
file in falling order, ``echo ---`` between parts, ``cat a b``, ``head a b``, a script
cut by a syntax error, a heredoc patch and ``git apply``, ``awk ... > tmp && mv tmp f``,
an inserted block under a numbered window, and a harness-cut edge line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_run import started
from gitrepo import make_repo, module_lines

from streameval.model import RunInfo, ToolCall
from streameval.reading.steps import StepBuilder
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.sources.repo import GitRepo
from streameval.traces.files import iter_lines, open_adapter

#: alpha at 3, beta 10, gamma 17, delta 24, eps 31, zeta 38, eta 45, theta 52 (58 lines)
A = module_lines()
#: blank lines and `return None` as in a.py: a line of one credited in the other is wrong
B = ['"""Helpers."""', "", "def one(x):", "    return None", "", "", "def two(x):",
     "    if x:", "        return x", "    return None", "", "", "def three(x):",
     "    return None", ""]
BIG = [f"line {i} of the big file" for i in range(1, 301)]


def text(lines: list[str]) -> str:
    return "".join(ln + "\n" for ln in lines)


def window(lines: list[str], a: int, b: int, numbered: bool = False) -> str:
    """Lines a..b as `sed -n 'a,bp'` prints them (`nl -ba | sed -n` when numbered)."""
    if numbered:
        return "".join(f"{k:6d}\t{lines[k - 1]}\n" for k in range(a, b + 1))
    return text(lines[a - 1:b])


#: the heredoc script: three lines after line 9 of a.py (the blank line before beta)
INSERT = ("lines = open('pkg/a.py').readlines()\n"
          "lines[9:9] = ['X = 1\\n', 'Y = 2\\n', 'Z = 3\\n']\n"
          "open('pkg/a.py', 'w').writelines(lines)\n")
A_INSERTED = A[:9] + ["X = 1", "Y = 2", "Z = 3"] + A[9:]
B_PATCHED = B[:3] + ["    return 1"] + B[4:]
B_AWKED = B[:3] + ["    # checked"] + B[3:]
PATCH = ("--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -3,2 +3,2 @@\n def one(x):\n-    return None\n"
         "+    return 1\n")
SYNTAX = ("python - <<'PY'\n" + INSERT + "print('patched')\nPY\n"
          "&& nl -ba pkg/a.py | sed -n '1,12p'")
SYNTAX_OUT = ("patched\nbash: -c: line 7: syntax error near unexpected token `&&'\n"
              "bash: -c: line 7: `&& nl -ba pkg/a.py | sed -n '1,12p''\n")


def _cut(lines: list[str], head_lines: int, head_cut: int, tail_from: int,
         tail_cut: int) -> tuple[str, str, int]:
    """mini-swe-agent's head and tail of a long output: the head ends ``head_cut``
    characters into line head_lines+1, the tail starts ``tail_cut`` characters into line
    tail_from."""
    whole = text(lines)
    head = text(lines[:head_lines]) + lines[head_lines][:head_cut]
    tail = lines[tail_from - 1][tail_cut:] + "\n" + text(lines[tail_from:])
    return head, tail, len(whole) - len(head) - len(tail)


#: per run: its calls (command, output, return code or a cut), and the base lines each
#: call showed, by hand (None: a call that showed no repository line)
RUNS: dict[str, dict] = {
    "chain-two-files": {
        "calls": [("sed -n '3,9p' pkg/a.py && sed -n '7,11p' pkg/b.py",
                   window(A, 3, 9) + window(B, 7, 11), 0)],
        "expected": [{"pkg/a.py": set(range(3, 10)), "pkg/b.py": set(range(7, 12))}]},
    "chain-falling": {
        "calls": [("sed -n '24,30p' pkg/a.py && sed -n '5,9p' pkg/a.py",
                   window(A, 24, 30) + window(A, 5, 9), 0)],
        "expected": [{"pkg/a.py": set(range(24, 31)) | set(range(5, 10))}]},
    "chain-cat-nl": {
        "calls": [("cat pkg/b.py && nl -ba pkg/a.py | sed -n '12,16p'",
                   text(B) + window(A, 12, 16, numbered=True), 0)],
        "expected": [{"pkg/b.py": set(range(1, 16)), "pkg/a.py": set(range(12, 17))}]},
    "echo-separator": {
        "calls": [("sed -n '3,9p' pkg/a.py; echo ---; sed -n '12,15p' pkg/b.py",
                   window(A, 3, 9) + "---\n" + window(B, 12, 15), 0)],
        "expected": [{"pkg/a.py": set(range(3, 10)), "pkg/b.py": set(range(12, 16))}]},
    "cat-a-b": {
        "calls": [("cat pkg/b.py pkg/a.py", text(B) + text(A), 0)],
        "expected": [{"pkg/b.py": set(range(1, 16)), "pkg/a.py": set(range(1, 59))}]},
    "head-a-b": {
        "calls": [("head -n 5 pkg/a.py pkg/b.py",
                   "==> pkg/a.py <==\n" + window(A, 1, 5) + "\n==> pkg/b.py <==\n"
                   + window(B, 1, 5), 0)],
        "expected": [{"pkg/a.py": set(range(1, 6)), "pkg/b.py": set(range(1, 6))}]},
    "syntax-error": {
        # the script ran (bash ran the complete command before the bad line); the
        # numbered read then shows base 8-9, the three inserted lines, base 10-12
        "calls": [(SYNTAX, SYNTAX_OUT, 2),
                  ("nl -ba pkg/a.py | sed -n '8,15p'", window(A_INSERTED, 8, 15, True), 0)],
        "expected": [None, {"pkg/a.py": set(range(8, 13))}]},
    "heredoc-patch": {
        "calls": [("cat > fix.patch <<'EOF'\n" + PATCH + "EOF\ngit apply fix.patch && "
                   "sed -n '1,8p' pkg/b.py", window(B_PATCHED, 1, 8), 0)],
        "expected": [{"pkg/b.py": {1, 2, 3, 5, 6, 7, 8}}]},
    "awk-mv": {
        "calls": [("awk 'NR==4{print \"    # checked\"} {print}' pkg/b.py > /tmp/b.py && "
                   "mv /tmp/b.py pkg/b.py", "", 0),
                  ("sed -n '1,7p' pkg/b.py", window(B_AWKED, 1, 7), 0)],
        "expected": [None, {"pkg/b.py": set(range(1, 7))}]},
    "inserted-block": {
        "calls": [("cat <<'EOF' > fix.py\n" + INSERT + "EOF\npython3 fix.py", "", 0),
                  ("nl -ba pkg/a.py | sed -n '8,15p'", window(A_INSERTED, 8, 15, True), 0)],
        "expected": [None, {"pkg/a.py": set(range(8, 13))}]},
    "cut-edge": {
        # head: lines 1-49 and the first 6 characters of line 50; tail: line 260 from
        # its 5th character, then 261-300: the two cut lines count whole
        "calls": [("cat pkg/big.txt", _cut(BIG, 49, 6, 260, 4), 0)],
        "expected": [{"pkg/big.txt": set(range(1, 51)) | set(range(260, 301))}]},
}


def _turn(command: str, output, code: int) -> list[dict]:
    if isinstance(output, tuple):
        head, tail, n = output
        obs = (f"<returncode>{code}</returncode>\n<output_head>\n{head}\n</output_head>\n"
               f"<elided_chars>\n{n} characters elided\n</elided_chars>\n"
               f"<output_tail>\n{tail}\n</output_tail>")
    else:
        obs = f"<returncode>{code}</returncode>\n<output>\n{output}</output>"
    return [{"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"},
            {"role": "user", "content": obs}]


def _trajectory(instance: str, calls: list) -> dict:
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "<pr_description>fix it</pr_description>"}]
    for command, output, code in calls:
        messages += _turn(command, output, code)
    return {"trajectory_format": "mini-swe-agent-1", "instance_id": instance,
            "info": {"exit_status": "Submitted", "submission": "",
                     "config": {"environment": {"cwd": "/testbed"},
                                "model": {"model_name": "scripted"}}},
            "messages": messages}


def _gold(expected: list) -> list[tuple[str, int, int]]:
    """The union of what the run's calls showed, as ranges per file."""
    lines: dict[str, set[int]] = {}
    for shown in expected:
        for f, ns in (shown or {}).items():
            lines.setdefault(f, set()).update(ns)
    out = []
    for f, ns in sorted(lines.items()):
        run: list[int] = []
        for n in sorted(ns):
            if run and n != run[-1] + 1:
                out.append((f, run[0], run[-1]))
                run = []
            run.append(n)
        out.append((f, run[0], run[-1]))
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compound")
    repo = tmp / "repo"
    sha = make_repo(repo, {"pkg/a.py": text(A), "pkg/b.py": text(B),
                           "pkg/big.txt": text(BIG)})[0]
    gold = tmp / "gold.jsonl"
    runs = tmp / "runs"
    traces: dict[str, Path] = {}
    with gold.open("w") as fh:
        for name, run in RUNS.items():
            inst = f"demo__{name}"
            fh.write(json.dumps({
                "instance_id": inst, "original_inst_id": inst, "repo": "demo/compound",
                "base_commit": sha, "language": "python",
                "init_ctx": [{"file": f, "start_line": a, "end_line": b}
                             for f, a, b in _gold(run["expected"])], "add_ctx": []}) + "\n")
            (runs / inst).mkdir(parents=True)
            traces[name] = runs / inst / f"{inst}.traj.json"
            traces[name].write_text(json.dumps(_trajectory(inst, run["calls"]), indent=1))
    return load_resources(str(gold), None, str(repo)), traces, runs, GitRepo(repo).at(sha), tmp


def _per_call(trace: Path, view) -> list[dict[str, set[int]] | None]:
    """Base lines each call credited, by the step builder replay and watch use."""
    _, adapter = open_adapter(trace)
    events = []
    for line, lineno in iter_lines(trace):
        if line is not None:
            events.extend(adapter.feed(line, lineno) or [])
    events.extend(adapter.close())
    builder = StepBuilder(view)
    out: list[dict[str, set[int]] | None] = []
    for ev in events:
        if isinstance(ev, RunInfo) and ev.cwd:
            builder.add_root(ev.cwd)
        if not isinstance(ev, ToolCall):
            continue
        step = builder.consume(ev).step
        out.append(None if step is None else {
            f: {n for a, b in spans for n in range(a, b + 1)} for f, spans in step.spans.items()})
    return out


def _exact(record: dict, name: str) -> None:
    """Credited equals the gold (what was shown) at every granularity."""
    assert "error" not in record, record
    for granularity in ("file", "symbol", "span", "line"):
        got = record["final"][granularity]
        assert got["coverage"] == 1.0 and got["precision"] == 1.0, (name, granularity, got)
        assert got["intersection"] == got["gold_size"] == got["pred_size"], (name, granularity)
    if name in ("syntax-error", "heredoc-patch"):
        # the script before the syntax error and the patch the command wrote were read
        assert "unparsed_command" not in (record.get("problems") or {}), name


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_call_credits_exactly_the_base_lines_it_showed(setup, name):
    _, traces, _, view, _ = setup
    assert _per_call(traces[name], view) == RUNS[name]["expected"]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_replay_is_exact_at_all_four_granularities(setup, name):
    res, traces, _, _, _ = setup
    (record,) = evaluate_trace(traces[name], res)
    _exact(record, name)


def test_the_shell_classes_are_edits_where_they_edited(setup):
    """The script cut by a syntax error, the heredoc patch and the awk/mv each edited a
    file: their calls are edits, not commands that changed nothing."""
    res, traces, _, _, _ = setup
    for name in ("syntax-error", "heredoc-patch", "awk-mv", "inserted-block"):
        (record,) = evaluate_trace(traces[name], res)
        assert record["edits"] >= 1 and (record.get("categories") or {}).get("edit"), \
            (name, record.get("categories"))


def test_watch_gives_the_replayed_records(setup):
    res, traces, runs, _, tmp = setup
    w = started(runs, res, tmp)
    watched = {run.session.identity.instance_id: run.session.record()
               for run in w.table.runs.values()}
    assert set(watched) == {f"demo__{name}" for name in RUNS}
    for name, trace in traces.items():
        record = watched[f"demo__{name}"]
        _exact(record, name)
        (replayed,) = evaluate_trace(trace, res)
        assert {k: v for k, v in record.items() if k != "run_id"} == \
            {k: v for k, v in replayed.items() if k != "run_id"}, name
