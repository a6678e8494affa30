"""The reading patterns end to end: four runs, scored by replay and by watch.

- ``align-1`` (mini-swe-agent): a Python script inserts two lines after base line 9 of
  ``pkg/mod.py``; reads follow with ``grep -n``, ``sed -n``, ``nl -ba | sed -n``,
  ``grep -A`` without ``-n``; then ``cat`` of a big file whose output the harness cut
  mid-line at both edges.
- ``align-2`` (mini-swe-agent): a regex ``sed -i`` inserts two lines; ``head``;
  ``cat f | grep -n``; a chain ``git checkout f && sed -i ... f && python3 x.py`` that
  fails at its end (its checkout and insert happened); a ``sed -n`` window over the insert.
- ``align-3`` (SWE-agent): an editor ``view`` whose output has an elision marker line.
- ``align-4`` (Claude Code): a ``Read`` that never got a result, then a ranged ``Read``.

Every read's base lines were worked out by hand; the gold is chosen so that the line
numbers in each record say exactly which lines were credited.
"""

from __future__ import annotations

import json

import pytest
from claude_run import started  # noqa: E402
from gitrepo import make_repo
from test_alignment import AFTER_INSERT, BASE, BASE_LINES, BIG, INSERT_SCRIPT, current  # noqa: E402

from streameval.runs.evaluate import evaluate_trace  # noqa: E402
from streameval.runs.resources import load_resources  # noqa: E402

BIG_LINES = BIG.splitlines()


def _turn(command: str, output: str, code: int = 0,
          head_tail: tuple[str, str, int] | None = None) -> list:
    if head_tail is None:
        obs = f"<returncode>{code}</returncode>\n<output>\n{output}</output>"
    else:
        head, tail, n = head_tail
        obs = (f"<returncode>{code}</returncode>\n<output_head>\n{head}\n</output_head>\n"
               f"<elided_chars>\n{n} characters elided\n</elided_chars>\n"
               f"<output_tail>\n{tail}\n</output_tail>")
    return [{"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"},
            {"role": "user", "content": obs}]


def _miniswe(instance: str, turns: list) -> dict:
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "<pr_description>fix it</pr_description>"}]
    for t in turns:
        messages += t
    return {"trajectory_format": "mini-swe-agent-1", "instance_id": instance,
            "info": {"exit_status": "Submitted", "submission": "",
                     "config": {"environment": {"cwd": "/testbed"},
                                "model": {"model_name": "scripted"}}},
            "messages": messages}


def run_1() -> dict:
    return _miniswe("demo__align-1", [
        _turn(INSERT_SCRIPT, ""),
        _turn("grep -n 'def eps' pkg/mod.py", "33:def eps(x):\n"),
        _turn("sed -n '30,40p' pkg/mod.py", current(AFTER_INSERT, 30, 40)),
        _turn("nl -ba pkg/mod.py | sed -n '8,14p'", current(AFTER_INSERT, 8, 14, True)),
        _turn("grep -A3 'def gamma' pkg/mod.py",
              "def gamma(x):\n    value = x * 4\n    if value:\n        return value\n"),
        _turn("cat pkg/big.txt", "", head_tail=("\n".join(BIG_LINES[:50])[:-6],
                                                "\n".join(BIG_LINES[259:])[4:], 7000)),
    ])


#: after run 2's regex sed -i: two lines after `def alpha(x):` (base 3)
AFTER_SED = BASE_LINES[:3] + ["    # note one", "    # note two"] + BASE_LINES[3:]
#: after its failing chain: the checkout restored the base, then `# b` before `def beta`
AFTER_CHAIN = BASE_LINES[:9] + ["# b"] + BASE_LINES[9:]
RETURN_VALUE = [6, 13, 20, 27, 34, 41, 48, 55]   # base lines "        return value"


def run_2() -> dict:
    grep = "".join(f"{i + 1}:{t}\n" for i, t in enumerate(AFTER_SED) if t.endswith("return value"))
    return _miniswe("demo__align-2", [
        _turn("sed -i '/def alpha(x):/a\\    # note one\\n    # note two' pkg/mod.py", ""),
        _turn("head -n 25 pkg/mod.py", current(AFTER_SED, 1, 25)),
        _turn("cat pkg/mod.py | grep -n 'return value'", grep),
        _turn("git checkout pkg/mod.py && sed -i '/def beta/i\\# b' pkg/mod.py && python3 x.py",
              "python3: can't open file '/testbed/x.py': [Errno 2] No such file or directory\n",
              code=2),
        _turn("sed -n '9,12p' pkg/mod.py", current(AFTER_CHAIN, 9, 12)),
    ])


def run_3() -> dict:
    view = ("<NOTE>This file is too large to display entirely. Showing abbreviated version."
            "</NOTE>\n     1 \"\"\"A module.\"\"\"\n     2 import os\n     3 def alpha(x):\n"
            "     4 ... eliding lines 4-8 ...\n     9 \n    10 def beta(x):\n")
    step = {"action": "str_replace_editor view /testbed/pkg/mod.py", "observation": view,
            "response": "", "thought": "look", "execution_time": 0.1,
            "state": {"working_dir": "/testbed"}, "query": [], "extra_info": {}}
    return {"environment": "demo__align-3", "trajectory": [step], "history": [],
            "info": {"exit_status": "submitted", "submission": ""},
            "replay_config": json.dumps({"agent": {"model": {"name": "scripted"}}})}


def run_4() -> list[dict]:
    """Claude Code stream-json: the first Read was never answered (the run ended first)."""
    ws = "/workspace/demo"
    def use(tid: str, path: str, **extra) -> dict:
        return {"type": "assistant", "session_id": "s4", "message": {
            "id": f"m-{tid}", "role": "assistant", "model": "scripted", "content": [
                {"type": "tool_use", "id": tid, "name": "Read",
                 "input": {"file_path": f"{ws}/{path}", **extra}}]}}
    shown = "".join(f"{i:>6}→{BIG_LINES[i - 1]}\n" for i in range(1, 11))
    return [{"type": "system", "subtype": "init", "cwd": ws, "session_id": "s4",
             "tools": ["Read"], "model": "scripted"},
            use("t1", "pkg/mod.py"),
            use("t2", "pkg/big.txt", offset=1, limit=10),
            {"type": "user", "session_id": "s4", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": shown}]}},
            {"type": "result", "subtype": "error_during_execution", "is_error": True,
             "session_id": "s4", "num_turns": 2}]


#: per run: gold line ranges; the base lines each read credited, by hand; the shown-line
#: outcomes; and the edits the record must count
EXPECTED = {
    "demo__align-1": {
        # eps (31-37) and theta's body (53-58, never read), big.txt 40-60 (half read)
        "gold": [("pkg/mod.py", 31, 37), ("pkg/mod.py", 53, 58), ("pkg/big.txt", 40, 60)],
        # grep 31; sed 28-38; nl 8-12 (2 agent lines); grep -A 17-20; big.txt head and tail
        "reads": [("pkg/mod.py", {31}), ("pkg/mod.py", set(range(28, 39))),
                  ("pkg/mod.py", set(range(8, 13))), ("pkg/mod.py", set(range(17, 21))),
                  ("pkg/big.txt", set(range(1, 51)) | set(range(260, 301)))],
        "agent_written": 2, "edits": 1, "steps": 5},
    "demo__align-2": {
        "gold": [("pkg/mod.py", 20, 27)],
        # head 1-23 (two agent lines); grep -n of the cat: every `return value`; 9-11
        "reads": [("pkg/mod.py", set(range(1, 24))), ("pkg/mod.py", set(RETURN_VALUE)),
                  ("pkg/mod.py", {9, 10, 11})],
        "agent_written": 3, "edits": 2, "steps": 3},
    "demo__align-3": {
        "gold": [("pkg/mod.py", 3, 12)],
        "reads": [("pkg/mod.py", {1, 2, 3, 9, 10})],     # the marker line shows nothing
        "agent_written": 0, "edits": 0, "steps": 1},
    "demo__align-4": {
        "gold": [("pkg/mod.py", 1, 5), ("pkg/big.txt", 5, 6)],
        "reads": [("pkg/big.txt", set(range(1, 11)))],   # the unanswered Read: nothing
        "agent_written": 0, "edits": 0, "steps": 1},
}


@pytest.fixture
def setup(tmp_path):
    repo = tmp_path / "repo"
    sha = make_repo(repo, {"pkg/mod.py": BASE, "pkg/big.txt": BIG})[0]
    gold = tmp_path / "gold.jsonl"
    with gold.open("w") as fh:
        for inst, exp in EXPECTED.items():
            fh.write(json.dumps({
                "instance_id": inst, "original_inst_id": inst, "repo": "demo/align",
                "base_commit": sha, "language": "python",
                "init_ctx": [{"file": f, "start_line": a, "end_line": b} for f, a, b in exp["gold"]],
                "add_ctx": []}) + "\n")
    runs = tmp_path / "runs"
    traces = {}
    for inst, doc in (("demo__align-1", run_1()), ("demo__align-2", run_2())):
        (runs / inst).mkdir(parents=True)
        traces[inst] = runs / inst / f"{inst}.traj.json"
        traces[inst].write_text(json.dumps(doc, indent=1))
    (runs / "swe").mkdir()
    traces["demo__align-3"] = runs / "swe" / "demo__align-3.traj"
    traces["demo__align-3"].write_text(json.dumps(run_3(), indent=1))
    (runs / "claude").mkdir()
    (runs / "claude" / "meta.json").write_text(json.dumps({"instance_id": "demo__align-4"}))
    traces["demo__align-4"] = runs / "claude" / "trace.jsonl"
    traces["demo__align-4"].write_text("".join(json.dumps(o) + "\n" for o in run_4()))
    return load_resources(str(gold), None, str(repo)), traces, runs


def _check(inst: str, record: dict) -> None:
    exp = EXPECTED[inst]
    assert "error" not in record, record
    gold: dict[str, set[int]] = {}
    for f, a, b in exp["gold"]:
        gold.setdefault(f, set()).update(range(a, b + 1))
    read: dict[str, set[int]] = {}
    for f, lines in exp["reads"]:
        read.setdefault(f, set()).update(lines)
    line = record["final"]["line"]
    assert line["pred_size"] == sum(map(len, read.values())), inst
    assert line["intersection"] == sum(len(v & gold.get(f, set())) for f, v in read.items()), inst
    assert line["gold_size"] == sum(map(len, gold.values()))
    assert record["final"]["file"]["intersection"] == len(set(read) & set(gold))
    assert record["num_steps"] == exp["steps"], inst
    assert record["edits"] == exp["edits"], inst
    # shown lines count per read: a line shown by two reads counts twice
    assert record["shown_lines"] == {"aligned": sum(len(v) for _, v in exp["reads"]),
                                     "agent_written": exp["agent_written"], "unaligned": 0}, inst


@pytest.mark.parametrize("inst", sorted(EXPECTED))
def test_replay_credits_the_lines_the_text_shows(setup, inst):
    res, traces, _ = setup
    (record,) = evaluate_trace(traces[inst], res)
    assert record["instance_id"] == inst
    _check(inst, record)


def test_watch_gives_the_replayed_records(setup, tmp_path):
    res, traces, runs = setup
    w = started(runs, res, tmp_path)
    watched = {run.session.identity.instance_id: run.session.record()
               for run in w.table.runs.values()}
    assert set(watched) == set(EXPECTED)
    for inst, trace in traces.items():
        _check(inst, watched[inst])
        (replayed,) = evaluate_trace(trace, res)
        assert {k: v for k, v in watched[inst].items() if k != "run_id"} == \
            {k: v for k, v in replayed.items() if k != "run_id"}, inst


def test_a_claude_read_ending_on_a_real_blank_line_credits_it(tmp_path):
    """Issue 32: a Claude ``Read`` that reached a file's end whose last shown line is a
    real blank line of the file was not credited with it: an empty last numbered line
    was taken for the piece after the final newline (which Code 2.1 numbers too) without
    asking the file. ``src/app.py`` has 60 lines, the 60th blank."""
    from claude_run import APP, Claude, append, make_setup

    from streameval.commands.main import main

    s = make_setup(tmp_path)
    assert APP.split("\n")[59] == "" and len(APP.split("\n")) == 61   # 60 lines + the piece
    gold = tmp_path / "gold-58-60.jsonl"
    gold.write_text(json.dumps({**json.loads(s.gold.read_text()), "add_ctx": [],
                                "init_ctx": [{"file": "src/app.py", "start_line": 58,
                                              "end_line": 60}]}) + "\n")
    c = Claude()
    older = c.read("src/app.py", APP, 58, 3)     # shows 58-60, as Code before 2.1 does...
    use = json.loads(older[0])
    use["message"]["content"][0]["input"]["limit"] = 10   # ... for a limit it did not reach
    newer = c.read("src/app.py", APP, 58, 10)    # 58-61: Code 2.1 numbers the piece, 61
    assert json.loads(newer[1])["message"]["content"][0]["content"].endswith("    61\u2192")
    for name, lines in (("older", [json.dumps(use).encode(), older[1]]), ("newer", newer)):
        run = tmp_path / "runs" / name
        run.mkdir(parents=True)
        (run / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name}))
        append(run / "trace.jsonl", c.init(), *lines, c.result())
    out = tmp_path / "out.jsonl"
    assert main(["replay", str(tmp_path / "runs"), "--gold", str(gold), "--repo", str(s.repo),
                 "--out", str(out), "--quiet"]) == 0
    for rec in map(json.loads, out.read_text().splitlines()):
        line = rec["final"]["line"]
        # 58-60 credited; the piece, line 61, is no line of the file
        assert (line["coverage"], line["pred_size"]) == (1.0, 3), rec["run_id"]
