"""Each gold file line by line, from real traces: lines credited by the step that first
credited them, and every gold range not credited with the reason (never read, only
listed, shown but the agent's own)."""

from __future__ import annotations

import json

from claude_run import APP, WORKSPACE, Claude, bash, edit_lines

from streameval.report.goldview import edited_lines, gold_files
from streameval.report.journal import RunJournal
from streameval.runs.evaluate import evaluate_trace


def score(env, lines: list[bytes]):
    s, runs, res = env
    d = runs / "r"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r"}))
    (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    journal = RunJournal()
    (record,) = evaluate_trace(d / "trace.jsonl", res, root=runs,
                               on_session=lambda session: session.listeners.append(journal))
    gold = res.lookup(s.instance)
    files = {f["file"]: f for f in gold_files(gold, journal, {"src/app.py": 60}, {})}
    return record, files


def test_lines_credited_by_the_step_that_first_credited_them(env):
    c = Claude()
    _rec, files = score(env, [c.init(), *c.read("src/app.py", APP, 1, 5),
                              *c.read("src/app.py", APP, 3, 10)])
    app = files["src/app.py"]
    assert app["read"] == [[1, 5, 1], [6, 12, 2]]
    assert app["uncredited"] == [] and app["lines"] == 60
    assert files["src/util.py"]["uncredited"] == [
        {"lines": [1, 5], "why": "never shown: the file was not read"}]


def test_a_file_only_listed_says_so(env):
    c = Claude()
    _rec, files = score(env, [c.init(), *bash(c, f"ls {WORKSPACE}/src", "app.py\nutil.py\n"),
                              *c.read("src/app.py", APP, 1, 20)])
    assert files["src/util.py"]["listed_at"] == 1
    assert files["src/util.py"]["uncredited"] == [
        {"lines": [1, 5], "why": "never shown: the file was only listed (call 1)"}]


def test_lines_shown_after_the_agent_changed_them_are_not_credited_and_say_why(env):
    c = Claude()
    edited = APP.replace("    return x + 2\n", "    return x * 2\n", 1)
    rec, files = score(env, [
        c.init(), *edit_lines(c, "src/app.py", "    return x + 2\n", "    return x * 2\n"),
        *c.read("src/app.py", edited, 1, 12)])
    app = files["src/app.py"]
    assert app["uncredited"] == [{"lines": [5, 5], "why": "shown at call 2, not credited: 1 shown "
                                  "line(s) were the agent's own (no base-commit counterpart)"}]
    assert app["edited_at"] == [1]
    assert rec["final"]["line"]["coverage"] == 5 / 6   # the number the strip explains


def test_edited_lines_are_the_patch_lines_editloc_counts():
    patch = ("--- a/src/app.py\n+++ b/src/app.py\n@@ -4,3 +4,3 @@\n def f2(x):\n"
             "-    return x + 2\n+    return x * 2\n \n")
    assert edited_lines(patch) == {"src/app.py": [(5, 5)]}
    assert edited_lines(None) == {} and edited_lines("  ") == {}
