"""Issue 17's classes of real traces, each on its real public file: detected with no
``--format``, the right number of calls, and the reads credited with the right files and
lines, as checked by hand in ``benchmarks/wild/expected.json`` (provenance in
``tests/fixtures/real/SOURCES.md``). Where streameval's documented rule differs from a
note there, the test says so next to the value.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from fixture_paths import REAL, ROOT
from gitrepo import make_repo

from streameval.commands.main import main
from streameval.model import ToolCall
from streameval.reading.infer import infer
from streameval.runs.batch import iter_trace_files
from streameval.traces.files import iter_lines, open_adapter

EXPECTED = json.loads((ROOT / "benchmarks" / "wild" /
                       "expected.json").read_text())


def _expected(name: str) -> dict:
    return next(f for f in EXPECTED["fixtures"] if f["file"].rstrip("/").endswith(name))


def inspect(path: Path, *args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["inspect", str(path), "--quiet", "--json", "-", "--first", "500", *args])
    assert rc == 0
    return json.loads(out.getvalue())


def reads_of(run: dict) -> dict[int, list[tuple[str, list | None]]]:
    by_call: dict[int, list[tuple[str, list | None]]] = {}
    for r in run["first_reads"]:
        by_call.setdefault(r["call"], []).append((r["file"], r["lines"]))
    return by_call


def calls_of(path: Path) -> list[ToolCall]:
    _fmt, adapter = open_adapter(path)
    events = []
    for line, lineno in iter_lines(path):
        events += adapter.feed(line, lineno)
    return [e for e in events + adapter.close() if isinstance(e, ToolCall)]


# --------------------------------------------------------------------------- OpenHands V1

V1 = "openhands-v1__OpenHands__benchmarks__openagentsafety-gpt-4o-output.jsonl"
V1_CRITIC = ("openhands-v1__OpenHands__benchmarks__openagentsafety-gpt-4o-output."
             "critic_attempt_1.lines-3-8-12.jsonl")


@pytest.mark.parametrize("name", [V1, V1_CRITIC])
def test_openhands_v1_output_gives_every_call(name: str):
    doc = inspect(REAL / "openhands" / name)
    expected = _expected(name)["expected"]["runs"]
    assert doc["format"] == "openhands"
    assert [(r["instance_id"], r["tool_calls"]) for r in doc["runs"]] == \
        [(e["instance_id"], e["tool_calls"]) for e in expected]


def test_openhands_v1_parallel_calls_and_views():
    doc = inspect(REAL / "openhands" / V1_CRITIC)
    migrate, transitions, exfiltration = doc["runs"]
    # the snippet call 3's str_replace printed was shown to the agent: a read of the
    # edited file (docs/metrics.md §6a), here the agent's own migrate_compare.py
    assert migrate["first_reads"] == [{"call": 3, "file": "migrate_compare.py",
                                       "lines": [3, 14]}] and migrate["edits"] == 2
    assert transitions["tool_calls"] == 11 and transitions["first_reads"] == []
    # the failed view reads nothing; the listings name files only (directories end in /)
    assert exfiltration["first_reads"] == [] and exfiltration["files_listed"]["count"] == 4
    assert all(f.startswith("bash_events/") for f in exfiltration["files_listed"]["files"])


# --------------------------------------------------------------------------- SDK directory

CONVERSATION = "openhands-sdk__OpenHands__software-agent-sdk__event-json-to-openai-messages"


def test_sdk_conversation_directory_is_one_run():
    doc = inspect(REAL / "openhands-sdk" / CONVERSATION)
    assert doc["format"] == "openhands-sdk" and doc["lines"] == 8   # 8 event files
    (run,) = doc["runs"]
    assert run["tool_calls"] == 2 and run["first_reads"] == []
    assert [c.tool for c in calls_of(REAL / "openhands-sdk" / CONVERSATION)] == \
        ["terminal", "finish"]


# --------------------------------------------------------------------------- Claude sub-agents

SUBAGENT = "claude-session__marot__spotter__subagent-agent-a7be2f0.jsonl"
PARENT = "claude-session__marot__spotter__8463c716.lines-1-7-947-988.jsonl"
SESSION = "8463c716-a2ea-4c14-9efa-87158ebd9f20"


def test_subagent_read_alone_is_a_run_of_its_own():
    doc = inspect(REAL / "claude-session" / SUBAGENT)
    (run,) = doc["runs"]
    assert doc["format"] == "claude"
    assert (run["tool_calls"], run["sidechain_calls"]) == (19, 0)
    assert run["run_id"] == f"{SESSION}/agent-a7be2f0"   # never the parent's run id
    reads = reads_of(run)
    for read in _expected(SUBAGENT)["expected"]["runs"][0]["reads"]:
        lines = read["lines"] if isinstance(read["lines"], list) else None
        assert (read["file"], lines) in reads[read["call"]], read
    # refused by Claude Code ("Sibling tool call errored"), a directory (EISDIR), and
    # commands that printed nothing: no read (the parallel pair 4/5 finishes in the
    # order Read, Bash)
    for call in (4, 5, 8, 10, 11, 17):
        assert call not in reads
    # call 13 (`grep -r` without -n) shows each file's matching lines: the shell reader
    # aligns them by their text (docs/metrics.md §6, "grep pat f without -n"); the hand
    # check in expected.json counts it as names only
    assert len(reads[13]) == 9 and all(lines is None for _f, lines in reads[13])


def test_parent_session_carries_its_subagent_as_sidechain_calls():
    (run,) = inspect(REAL / "claude-session" / PARENT)["runs"]
    assert (run["tool_calls"], run["sidechain_calls"]) == (1, 19)   # the Task call


def test_subagent_beside_its_session_is_part_of_that_run(tmp_path: Path):
    project = tmp_path / "projects" / "-home-USER-projects-spotter"
    (project / SESSION / "subagents").mkdir(parents=True)
    shutil.copy(REAL / "claude-session" / PARENT, project / f"{SESSION}.jsonl")
    shutil.copy(REAL / "claude-session" / SUBAGENT,
                project / SESSION / "subagents" / "agent-a7be2f0.jsonl")
    assert list(iter_trace_files(tmp_path)) == [project / f"{SESSION}.jsonl"]


# --------------------------------------------------------------------------- mini-swe-agent 0.x

MINI0 = "mini-swe-agent0__SWE-agent__mini-swe-agent__github_issue.traj.json"
#: tests/missing_colon.py of SWE-agent/test-repo at blob 20edef5 (the diff's base,
#: ``index 20edef5..``): the file the trajectory's agent printed
MISSING_COLON = ('#!/usr/bin/env python3\n\n\ndef division(a: float, b: float) -> float\n'
                 '    return a/b\n\n\nif __name__ == "__main__":\n'
                 '    print(division(123, 15))\n\n')


def test_pre_1_0_mini_swe_agent_list(tmp_path: Path):
    repo = tmp_path / "repo"
    make_repo(repo, {"tests/missing_colon.py": MISSING_COLON})
    doc = inspect(REAL / "mini-swe-agent" / MINI0, "--repo", str(repo))
    (run,) = doc["runs"]
    assert doc["format"] == "miniswe" and run["tool_calls"] == 10
    reads = reads_of(run)
    assert set(reads) == {4, 6}   # the two `cat`s; call 1's cat of a missing path read nothing
    # the file's 10th line is empty and `cat` printed it (the output ends "\n\n", and
    # mini-swe-agent shows the output whole): shown, so credited
    assert reads[4] == [("tests/missing_colon.py", [1, 10])]
    assert reads[6] == [("tests/missing_colon.py", [1, 10])]


#: the same file at SWE-agent/mini-swe-agent 12300cf, before the prompt named the agent
MINI0_12300CF = "mini-swe-agent0__SWE-agent__mini-swe-agent__github_issue-12300cf.traj.json"


@pytest.mark.parametrize("name", [MINI0, MINI0_12300CF])
def test_a_pre_1_0_list_is_detected_by_its_structure_not_its_prompt(tmp_path: Path, name: str):
    """Issue 32: the 12300cf list's system prompt is one short line and its submit
    command ``NANO_SWE_AGENT_FINAL_OUTPUT``: detection that looked for the later prompt's
    words refused it ("could not detect the trace format"). Its observations give
    ``<stdout>``/``<stderr>`` apart, read as the later ``<output>`` is."""
    repo = tmp_path / "repo"
    make_repo(repo, {"tests/missing_colon.py": MISSING_COLON})
    doc = inspect(REAL / "mini-swe-agent" / name, "--repo", str(repo))
    (run,) = doc["runs"]
    assert doc["format"] == "miniswe" and (run["tool_calls"], run["steps"]) == (10, 3)
    # the first `cat` of a missing path read nothing; the two others showed the whole file,
    # its empty 10th line too; the second after the agent's `sed -i` changed line 4
    assert reads_of(run) == {4: [("tests/missing_colon.py", [1, 10])],
                             6: [("tests/missing_colon.py", [1, 10])]}
    assert [(r["base"], r["unmatched"]) for r in run["first_reads"]] == [
        ([[1, 10]], 0), ([[1, 3], [5, 10]], 1)]


# --------------------------------------------------------------------------- Gemini CLI

GEMINI = "gemini-session__jnarowski__agentcmd__session-2025-10-27T19-55-981c87cb.json"


def test_gemini_session():
    doc = inspect(REAL / "gemini-session" / GEMINI)
    (run,) = doc["runs"]
    assert doc["format"] == "gemini" and run["tool_calls"] == 13
    assert reads_of(run) == {6: [("main.py", [1, 15])], 12: [("main.py", [1, 15])]}
    assert run["problems"] == {}


# --------------------------------------------------------------------------- Codex on Windows

PEEDOM_1 = "codex-rollout__Tdub206__PeeDom__rollout-2026-03-29T03-21-31-019d391c.lines-1-72.jsonl"
PEEDOM_2 = ("codex-rollout__Tdub206__PeeDom__rollout-2026-04-01T22-59-45-019d4cc6"
            ".lines-1-11-159-180.jsonl")


def _shown_lines(path: Path) -> dict[int, list[tuple[str, int, int | None, int]]]:
    """Per call: (path as written, start, end, lines of text shown) of its reads."""
    out = {}
    for n, call in enumerate(calls_of(path), 1):
        out[n] = [(r.path, r.start, r.end, len(r.shown.lines) if r.shown else 0)
                  for r in infer(call).reads if not r.listing]
    return out


def test_powershell_get_content_reads_whole_files():
    expected = _expected(PEEDOM_1)["expected"]["runs"][0]
    doc = inspect(REAL / "codex-rollout" / PEEDOM_1)
    (run,) = doc["runs"]
    assert doc["format"] == "codex" and run["tool_calls"] == expected["tool_calls"]
    assert run["reads_outside_repo"] == 3   # the three SKILL.md under C:\Users\T\.codex...
    shown = _shown_lines(REAL / "codex-rollout" / PEEDOM_1)
    for read in expected["reads"]:
        ((_p, start, end, count),) = shown[read["call"]]
        assert (start, end) == (None, None)   # Get-Content without a window: the whole file
        assert [1, count] == read["lines"], read
    assert {f for f, _ in sum(reads_of(run).values(), [])} == \
        {r["file"] for r in expected["reads"]}
    for call in (11, 15, 16, 17, 23):   # rg denied, git status, (tabs) paths, update_plan
        assert call not in reads_of(run)


def test_powershell_listings_are_file_names():
    (run,) = inspect(REAL / "codex-rollout" / PEEDOM_1)["runs"]
    assert run["files_listed"]["count"] == 45 + 25 + 183 + 42 - 11   # less the files read
    assert not [f for f in run["files_listed"]["files"] if "\\" in f or f.startswith("c:")]


def test_powershell_select_string_and_windows_paths():
    expected = _expected(PEEDOM_2)["expected"]["runs"][0]
    (run,) = inspect(REAL / "codex-rollout" / PEEDOM_2)["runs"]
    assert run["tool_calls"] == 8
    reads = reads_of(run)

    def numbers(call: int) -> dict[str, list[int]]:
        got = {}
        for r in run["first_reads"]:
            if r["call"] == call:
                got[r["file"]] = [a for a, b in r.get("runs", [r["lines"]]) for a in range(a, b + 1)]
        return got

    assert numbers(1) == expected["reads"][0]["files"]
    second = numbers(2)
    assert len(second) == expected["reads"][1]["files_count"]
    assert sum(len(v) for v in second.values()) == expected["reads"][1]["matches"]
    for name, lines in expected["reads"][1]["in_tracked_files"].items():
        assert second[name] == lines
    assert numbers(4) == {"web/assets/site.css": list(range(1, 21))}   # -TotalCount 20
    assert numbers(6) == expected["reads"][5]["files"]
    assert numbers(7) == expected["reads"][6]["files"]
    assert 8 not in reads   # Get-Content of a missing file
    shown = _shown_lines(REAL / "codex-rollout" / PEEDOM_2)
    assert shown[3][0][3] == 135 and shown[5][0][3] == 38   # the two whole files


def test_codex_output_header_and_crlf_are_not_output():
    for name in (PEEDOM_1, PEEDOM_2):
        for call in calls_of(REAL / "codex-rollout" / name):
            if call.tool == "shell_command" and call.output:
                assert not call.output.startswith(("Exit code:", "Wall time:", "Output:"))
                assert "\r\n" not in call.output
                assert "command timed out after" not in call.output.split("\n", 1)[0]
