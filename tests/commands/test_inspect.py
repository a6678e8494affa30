"""Golden test: every real trace goes through ``streameval inspect`` and its summary
matches an expected file checked by hand against the raw trace.

``expected_inspect/<fixture>.json`` holds, per run, the tool calls, steps, categories,
distinct files read (count + the first names in sorted order), files only listed, and
the first 5 reads; ``VERIFIED.md`` says how each was checked. Where the pipeline is
known to be wrong, the expected file keeps the RIGHT value and names the field under
``known_bugs``: that one comparison is a strict xfail, so it fails loudly once fixed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_paths import EXAMPLES, REAL

from streameval.commands.main import main
from streameval.traces.parts import is_conversation

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected_inspect"

FIELDS = ("tool_calls", "sidechain_calls", "steps", "categories", "files_read",
          "files_listed", "first_reads")


def _fixtures() -> list[Path]:
    """Every real trace: a file, or an SDK conversation directory (one trace)."""
    return sorted(p for p in REAL.glob("*/*")
                  if (p.is_file() or is_conversation(p)) and p.name != "SOURCES.md")


_cache: dict[Path, dict] = {}


def _inspect(trace: Path, tmp: Path) -> dict:
    """The ``--json`` summary of one trace, run in-process once per test session."""
    if trace not in _cache:
        out = tmp / f"{trace.name}.json"
        rc = main(["inspect", str(trace), "--quiet", "--json", str(out)])
        assert rc == 0, f"inspect exited {rc} on {trace.name}"
        _cache[trace] = json.loads(out.read_text(encoding="utf-8"))
    return _cache[trace]


def _project(run: dict, field: str, expected):
    """The part of a run summary one expected field is compared with."""
    if field in ("files_read", "files_listed"):
        return {"count": run[field]["count"],
                "sample": run[field]["files"][: len(expected["sample"])]}
    if field == "first_reads":
        return run[field][: len(expected)]
    return run[field]


def _cases():
    for trace in _fixtures():
        exp_path = EXPECTED / f"{trace.name}.json"
        bugs = json.loads(exp_path.read_text())["known_bugs"] if exp_path.exists() else {}
        for field in FIELDS:
            marks = []
            if field in bugs:
                marks = [pytest.mark.xfail(strict=True, reason=bugs[field])]
            yield pytest.param(trace, field, marks=marks, id=f"{trace.name}-{field}")


def test_every_fixture_is_covered():
    assert len(_fixtures()) >= 22, f"real fixtures missing under {REAL}"
    missing = [t.name for t in _fixtures() if not (EXPECTED / f"{t.name}.json").exists()]
    assert missing == []


@pytest.mark.parametrize("trace", _fixtures(), ids=lambda p: p.name)
def test_inspect_runs_clean(trace: Path, tmp_path_factory):
    doc = _inspect(trace, tmp_path_factory.mktemp("inspect"))
    expected = json.loads((EXPECTED / f"{trace.name}.json").read_text())
    assert doc["format"] == expected["format"]
    assert doc["lines"] == expected["lines"]
    assert [r["instance_id"] for r in doc["runs"]] == \
        [r["instance_id"] for r in expected["runs"]]
    for run in doc["runs"]:
        assert "metrics_error" in run and run["unparsed_lines"] == {}


@pytest.mark.parametrize(("trace", "field"), list(_cases()))
def test_inspect_golden(trace: Path, field: str, tmp_path_factory):
    doc = _inspect(trace, tmp_path_factory.mktemp("inspect"))
    expected = json.loads((EXPECTED / f"{trace.name}.json").read_text())
    assert len(doc["runs"]) == len(expected["runs"])
    for got, exp in zip(doc["runs"], expected["runs"]):
        assert _project(got, field, exp[field]) == exp[field], f"run {exp['instance_id']}"


def test_listing_directories_are_not_files_read(tmp_path_factory):
    """SWE-agent ``view /testbed`` prints directories; those with entries below them
    in the same run (``xarray``, ``xarray/core``) and the root are not files."""
    trace = REAL / "swe-agent-traj" / \
        "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.traj"
    run = _inspect(trace, tmp_path_factory.mktemp("inspect"))["runs"][0]
    listed = set(run["files_listed"]["files"])
    assert {"xarray/core/weighted.py", "setup.py"} <= set(run["files_read"]["files"]) | listed
    assert not listed & {".", "xarray", "xarray/core", "doc", "ci", "testbed"}


def test_inspect_subprocess_table_and_json(tmp_path: Path):
    trace = REAL / "claude-session" / "claude-session__jnarowski__agentcmd__full-session-four.jsonl"
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "streameval", "inspect", str(trace), "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^  12 S11 +Read ", proc.stdout, re.M)   # the per-call table, step 11 (Edit snippets are steps)
    assert "lines 45-64" in proc.stdout
    assert "files read   6 with lines shown, 4 more only listed" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["runs"][0]["steps"] == 24   # 14 reads and searches, 10 Edit snippets


def test_json_to_stdout_keeps_table_on_stderr(capsys):
    trace = REAL / "codex-exec-json" / \
        "codex-exec__link-assistant__hive-mind__issue-729-rapid-loop-section.extracted.jsonl"
    assert main(["inspect", str(trace), "--json", "-"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["runs"][0]["first_reads"][0] == {"call": 1, "file": "src/claude.lib.mjs",
                                                "lines": [1080, 1140]}
    assert "summary:" in captured.err


def test_unknown_format_is_a_clear_error(tmp_path: Path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\nworld\n")
    assert main(["inspect", str(bad)]) == 2
    assert "streameval inspect:" in capsys.readouterr().err


def test_with_gold_and_repo_scores_like_replay(tmp_path: Path):
    """With gold and a repo, inspect's metrics are replay's (one engine), reads are
    repo files with base lines, and the patch beside the trace gives EditLoc."""
    from streameval.runs.evaluate import evaluate_trace
    from streameval.runs.resources import Resources
    from streameval.sources.gold import load_gold
    from streameval.sources.repocache import RepoCache
    from streameval.sources.symbols import SymbolIndex

    ex = EXAMPLES
    trace = ex / "runs" / "example-run-1" / "trace.jsonl"
    out = tmp_path / "summary.json"
    assert main(["inspect", str(trace), "--quiet", "--gold", str(ex / "gold.jsonl"),
                 "--repo", str(ex / "repo"), "--json", str(out)]) == 0
    run = json.loads(out.read_text())["runs"][0]
    res = Resources(load_gold(ex / "gold.jsonl"), RepoCache(None, str(ex / "repo")), SymbolIndex())
    rec = evaluate_trace(trace, res)[0]
    assert run["repo"] is True and "metrics_error" not in run
    assert run["metrics"]["final"] == rec["final"]
    assert run["metrics"]["trajectory"] == rec["trajectory"]
    assert run["metrics"]["editloc"] == rec["editloc"]
    assert run["steps"] == rec["num_steps"]
    first = run["first_reads"][0]
    assert first["file"] == "README.md" and first["base"] == [first["lines"]]
    assert all(f in {"README.md", "inventory/billing.py", "inventory/__init__.py",
                     "inventory/stock.py", "web/cart.js", "tests/test_billing.py"}
               for f in run["files_read"]["files"])


def _claude_line(kind: str, content, uid: str) -> str:
    msg = {"role": kind, "content": content}
    if kind == "assistant":
        msg["id"] = f"m{uid}"
    return json.dumps({"type": kind, "message": msg, "cwd": "/repo", "sessionId": "s1",
                       "uuid": uid})


def test_repo_without_gold_maps_lines_to_base(tmp_path: Path):
    """``--repo`` alone: repo paths, base lines through the agent's edit, and names
    that are no repo files (a directory, /etc files, text of another command's
    output) are not files read."""
    from gitrepo import make_repo

    repo = tmp_path / "repo"
    sha_old, _ = make_repo(repo, {"a.py": "x = 1\na = 2\nb = 3\nc = 4\nd = 5\n"},
                           {"a.py": "changed later\n"})
    edit = {"file_path": "/repo/a.py", "old_string": "x = 1\n", "new_string": "x = 1\ny = 2\nz = 3\n"}
    lines = [
        _claude_line("user", "go", "u0"),
        _claude_line("assistant", [{"type": "tool_use", "id": "t1", "name": "Edit", "input": edit}], "u1"),
        _claude_line("user", [{"type": "tool_result", "tool_use_id": "t1",
                               "content": "The file /repo/a.py has been updated."}], "u2"),
        _claude_line("assistant", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {
            "file_path": "/repo/a.py", "offset": 2, "limit": 4}}], "u3"),
        _claude_line("user", [{"type": "tool_result", "tool_use_id": "t2", "content":
                               "     2→y = 2\n     3→z = 3\n     4→a = 2\n     5→b = 3\n"}], "u4"),
        _claude_line("assistant", [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {
            "command": "ls /repo; cat /etc/hosts"}}], "u5"),
        _claude_line("user", [{"type": "tool_result", "tool_use_id": "t3",
                               "content": "/repo:\na.py\nsub\n127.0.0.1 localhost\n"}], "u6"),
    ]
    trace = tmp_path / "run" / "trace.jsonl"
    trace.parent.mkdir()
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "s.json"
    assert main(["inspect", str(trace), "--quiet", "--repo", str(repo), "--commit", sha_old,
                 "--json", str(out)]) == 0
    run = json.loads(out.read_text())["runs"][0]
    assert run["repo"] is True and run["steps"] == 2
    assert run["first_reads"] == [{"call": 2, "file": "a.py", "lines": [2, 5], "base": [[2, 3]],
                                   "agent": 2, "unaligned": 0}]
    assert run["shown_lines"] == {"aligned": 2, "agent_written": 2, "unaligned": 0}
    assert run["files_read"] == {"count": 1, "files": ["a.py"]}
    assert run["files_listed"]["count"] == 0            # sub, /etc/..., hosts text: no files
    assert run["files_edited"] == ["a.py"]
    # at HEAD the file is one other line: the text shown is nowhere in it, and HEAD is
    # not the base commit, so none of it is called the agent's own (issue 19)
    assert main(["inspect", str(trace), "--quiet", "--repo", str(repo), "--json", str(out)]) == 0
    first = json.loads(out.read_text())["runs"][0]["first_reads"][0]
    assert first["base"] == [] and first["unmatched"] == 4 and "agent" not in first


def test_bad_repo_is_a_clear_error(tmp_path: Path, capsys):
    trace = REAL / "codex-exec-json" / "codex-exec__jnarowski__agentcmd__stream-output-3.jsonl"
    assert main(["inspect", str(trace), "--repo", str(tmp_path / "missing")]) == 2
    assert "--repo" in capsys.readouterr().err


def test_bad_lines_are_counted_not_fatal(tmp_path: Path):
    """A real trace cut short, with garbage lines: exit 0, reasons counted."""
    real = REAL / "claude-session" / "claude-session__jnarowski__agentcmd__full-session-four.jsonl"
    head = b"".join(real.read_bytes().splitlines(keepends=True)[:12])
    bad = tmp_path / "run" / "trace.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(head + b'{"type":"assistant", broken\n\xff\xfe not utf8\n[1,2]\n{"type":"us')
    out = tmp_path / "s.json"
    assert main(["inspect", str(bad), "--quiet", "--json", str(out)]) == 0
    run = json.loads(out.read_text())["runs"][0]
    assert {"malformed_json", "not_utf8", "not_an_object"} <= set(run["unparsed_lines"])
    assert run["first_reads"][0]["file"] == "apps/app/src/client/components/NavUser.tsx"


def test_grep_hits_are_printed_as_hits_not_as_a_window_mapped_onto_them(capsys):
    """Issue 32: the first reads printed a grep's hits as "lines 3-7 -> base 3,7", which
    reads as an edit that moved lines 3-7 to 3 and 7."""
    ex = EXAMPLES
    assert main(["inspect", str(ex / "runs" / "example-run-1" / "trace.jsonl"), "--gold",
                 str(ex / "gold.jsonl"), "--repo", str(ex / "repo")]) == 0
    out = capsys.readouterr().out
    assert "    #5    inventory/__init__.py lines 3,7\n" in out
    assert "    #5    inventory/billing.py lines 10,16-17\n" in out
    assert "    #10   inventory/billing.py lines 1,15-16,33-34,38,68\n" in out
    assert " -> base 3,7" not in out
