"""``inspect`` explains the numbers: a coverage column after each step, the gold never
credited and why, one edits count that is the record's (or says how it was counted), and
no "agent's own" lines when the repository is read at HEAD instead of the base commit."""

from __future__ import annotations

import json
from pathlib import Path

from claude_run import APP, UTIL, Claude, append, edit_lines, make_setup
from gitrepo import make_repo

from streameval.commands.main import main
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources


def write(c: Claude, command_path: str, text: str) -> list[bytes]:
    """A Write tool call (Claude Code) creating ``command_path`` with ``text``."""
    c.n += 1
    tid = f"toolu_w{c.n}"
    use = {"type": "assistant", "message": {"id": f"w{c.n}", "role": "assistant", "content": [
        {"type": "tool_use", "id": tid, "name": "Write",
         "input": {"file_path": command_path, "content": text}}]}}
    res = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": tid, "type": "tool_result", "content": f"File created at {command_path}"}]}}
    return [json.dumps(use).encode(), json.dumps(res).encode()]


def inspect(tmp_path: Path, trace: Path, *flags: str, capsys=None) -> tuple[dict, str]:
    out = tmp_path / "inspect.json"
    assert main(["inspect", str(trace), *flags, "--json", str(out)]) == 0
    text = capsys.readouterr().out if capsys is not None else ""
    return json.loads(out.read_text()), text


def run_trace(tmp_path: Path, s, lines: list[bytes]) -> Path:
    d = tmp_path / "runs" / "r"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r"}))
    append(d / "trace.jsonl", *lines)
    return d / "trace.jsonl"


def test_each_step_shows_its_coverage_and_the_gold_never_credited_says_why(tmp_path, capsys):
    s = make_setup(tmp_path)
    c = Claude()
    trace = run_trace(tmp_path, s, [c.init(), *c.read("src/util.py", UTIL, 1, 3),
                                    *c.read("src/app.py", APP, 1, 12)])
    doc, text = inspect(tmp_path, trace, "--gold", str(s.gold), "--repo", str(s.repo), capsys=capsys)
    rows = [line for line in text.splitlines() if line[:4].strip().isdigit()]
    (record,) = evaluate_trace(trace, load_resources(str(s.gold), None, str(s.repo)),
                               root=trace.parent.parent)
    for row, step in zip(rows, record["trajectory"]["steps"]):
        cov = " ".join(f"{step['coverage'][g]:.2f}" for g in ("file", "symbol", "span", "line"))
        assert f" S{step['step']} " in row and cov in row, row
    assert "coverage f/sym/span/line" in text.splitlines()[0]
    (run,) = doc["runs"]
    assert run["gold_files"] == 2
    assert run["gold_not_credited"] == [{"file": "src/util.py", "lines": [4, 5],
                                         "why": "never shown: the file was read, these lines were not"}]
    assert "    src/util.py lines 4-5: never shown: the file was read, these lines were not" in text


def test_one_edits_count_the_records(tmp_path, capsys):
    s = make_setup(tmp_path)
    c = Claude()
    trace = run_trace(tmp_path, s, [
        c.init(), *c.read("src/app.py", APP, 1, 20),
        *edit_lines(c, "src/app.py", "    return x + 2\n", "    return x * 2\n"),
        *write(c, "/tmp/scratch/try.py", "print(1)\n"),
        *write(c, "/workspace/demo/src/new_module.py", "X = 1\n")])
    res = load_resources(str(s.gold), None, str(s.repo))
    (record,) = evaluate_trace(trace, res, root=trace.parent.parent)
    scored, text = inspect(tmp_path, trace, "--gold", str(s.gold), "--repo", str(s.repo), capsys=capsys)
    assert scored["runs"][0]["edits"] == record["edits"]
    assert scored["runs"][0]["edits_as"] == "record"
    assert f"  edits        {record['edits']} (" in text and "as the record counts them" in text
    bare, text = inspect(tmp_path, trace, capsys=capsys)
    assert bare["runs"][0]["edits_as"] == "paths as the trace names them"
    assert "not a record's count: give --gold and --repo" in text


def test_a_repository_at_head_calls_no_line_the_agents_own_and_says_why(tmp_path, capsys):
    base_text = "".join(f"line {i}\n" for i in range(1, 21))
    head_text = base_text.replace("line 5\n", "line five, changed later\n")
    repo = tmp_path / "repo"
    base, _head = make_repo(repo, {"a.txt": base_text}, {"a.txt": head_text})
    c = Claude()
    d = tmp_path / "runs" / "x"
    d.mkdir(parents=True)
    # the agent worked on the base commit: it saw line 5 as it was then
    append(d / "trace.jsonl", c.init(), *c.read("a.txt", base_text, 1, 10))
    doc, text = inspect(tmp_path, d / "trace.jsonl", "--repo", str(repo), capsys=capsys)
    assert doc["warning"].startswith("the repository was read at HEAD")
    assert text.lstrip().startswith("# S")   # the table, then the summary's warning
    assert "\nwarning: the repository was read at HEAD" in text
    assert [line for line in text.splitlines()
            if "agent's own" in line and line.lstrip().startswith("read")] == []
    assert "1 shown line(s) match no line of the commit read" in text
    (run,) = doc["runs"]
    assert run["first_reads"][0]["unmatched"] == 1 and "agent" not in run["first_reads"][0]
    assert run["shown_lines"] == {"aligned": 9, "unmatched": 1, "unaligned": 0}
    assert run["edits_as"] == "repository at HEAD"
    # at the base commit the same read is wholly the base's, and nothing is withheld
    doc, text = inspect(tmp_path, d / "trace.jsonl", "--repo", str(repo), "--commit", base,
                        capsys=capsys)
    assert "warning" not in doc and doc["runs"][0]["shown_lines"]["aligned"] == 10
    assert doc["runs"][0]["first_reads"][0]["agent"] == 0
