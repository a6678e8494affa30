"""The live table of ``demo`` and ``replay --live``: a line precision of nothing read is
marked ``1.00*``, its footnote printed once (docs/metrics.md §3, §5b)."""

from __future__ import annotations

import io
import json
import re

from claude_run import APP, UTIL, Claude, append, started
from gitrepo import make_repo

from streameval.playback.reenact import EMPTY_NOTE, LiveTable, summarize
from streameval.runs.resources import load_resources


def _setup(tmp_path):
    sha = make_repo(tmp_path / "repo", {"src/app.py": APP, "src/util.py": UTIL})[-1]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"instance_id": "demo__demo-1", "repo": "demo/demo",
                                "base_commit": sha,
                                "init_ctx": [{"file": "src/app.py", "start_line": 4,
                                              "end_line": 9}]}) + "\n")
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    return load_resources(str(gold), None, str(tmp_path / "repo")), runs, d / "trace.jsonl"


def _listing(c: Claude) -> list[bytes]:
    """A Glob: the file level only, no line read."""
    c.n += 1
    use = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": f"g{c.n}", "name": "Glob", "input": {"pattern": "**/*.py"}}]}}
    res = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": f"g{c.n}", "type": "tool_result",
         "content": "/workspace/demo/src/app.py\n/workspace/demo/src/util.py"}]}}
    return [json.dumps(use).encode(), json.dumps(res).encode()]


def test_a_precision_of_nothing_read_is_marked_and_footnoted_once(tmp_path):
    res, runs, trace = _setup(tmp_path)
    c = Claude()
    append(trace, c.init(), *_listing(c))
    w = started(runs, res, tmp_path)
    out = io.StringIO()
    table = LiveTable(out)
    table(w)
    append(trace, *_listing(c))
    w.changed(trace)
    table(w)
    append(trace, *c.read("src/app.py", APP, 1, 20))
    w.changed(trace)
    table(w)
    rows = out.getvalue().splitlines()
    assert rows[0].split()[-4:] == ["prec(line)", "last", "tool", "call"]
    first, note, second, third = rows[1:]
    # file 1.00 (the Glob named the gold file), line 0.00, line precision 1.00 of nothing
    assert re.search(r"\s1\.00\s+0\.00\s+0\.00\s+0\.00\s+1\.00\*  Glob", first), first
    assert note == EMPTY_NOTE
    assert "1.00*" in second and "1.00*" not in third
    assert re.search(r"\s0\.30  Read ", third), third   # 6 of the 20 lines read are gold


def test_the_final_line_names_a_runs_flags(tmp_path):
    """A run whose only call showed no file (a command): every precision is the 1.0 of
    nothing predicted, and its final line says so."""
    res, runs, trace = _setup(tmp_path)
    c = Claude()
    use = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "make test"}}]}}
    answer = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "b1", "type": "tool_result", "content": "ok"}]}}
    append(trace, c.init(), json.dumps(use).encode(), json.dumps(answer).encode(), c.result())
    w = started(runs, res, tmp_path)
    said: list[str] = []
    [rec] = summarize(w, said.append)
    assert rec["problems"]["nothing_read"] == 1
    assert said[0].endswith("flagged: nothing_read")
