"""Gemini CLI sessions (``session-*.json``): the real session's golden summary (derived by
jq, ``tests/traces/formats/expected/VERIFIED.md``), detection, the shell answer's sections, the
project root from ``projectHash``, and what Gemini's own file tools showed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_miniswe import run_adapter, summarize

from streameval.model import Read, RunInfo, ToolCall
from streameval.reading.gemini import gemini_grep, gemini_ls, gemini_read
from streameval.reading.infer import infer
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.gemini import GeminiAdapter, shell_answer

EXPECTED = Path(__file__).resolve().parent / "expected"
NAME = "gemini-session__jnarowski__agentcmd__session-2025-10-27T19-55-981c87cb.json"
ROOT = "/Users/jnarowski/Dev/playground/src/test-project"


@pytest.fixture(scope="module")
def events(real_fixtures: Path) -> list:
    return run_adapter(GeminiAdapter(), (real_fixtures / "gemini-session" / NAME).read_bytes())


def test_golden_summary(events: list):
    assert summarize(events, NAME) == json.loads((EXPECTED / f"{NAME}.json").read_text())


def test_detected_without_format(real_fixtures: Path):
    assert detect_format(read_head(real_fixtures / "gemini-session" / NAME)) == "gemini"


def test_root_is_the_directory_whose_hash_the_session_names(events: list):
    (info,) = [e for e in events if isinstance(e, RunInfo)]
    assert info.cwd == ROOT   # sha256(ROOT) is the session's projectHash
    assert info.session_id == "981c87cb-90ef-4c7f-948d-23173ff43e4e"
    assert info.agent == "gemini-cli" and info.model


def test_shell_answers_are_the_commands_output(events: list):
    shells = [e for e in events if isinstance(e, ToolCall) and e.tool == "run_shell_command"]
    assert [c.interrupted for c in shells] == [True, False, False, False, False]  # cancelled
    pip = shells[1]
    assert pip.output == "bash: line 1: pip: command not found" and pip.is_error  # exit 127
    assert shells[3].output == "" and not shells[3].is_error   # "Output: (empty)", exit 0


def test_shell_answer_sections():
    text = ("Command: ls src\nDirectory: lib\nOutput: a.py\nb.py\nError: (none)\n"
            "Exit Code: 0\nSignal: 0\nBackground PIDs: (none)\nProcess Group PGID: 1")
    assert shell_answer(text) == ("a.py\nb.py", 0, "lib")
    assert shell_answer("plain text") == ("plain text", None, None)


def test_read_file_reads_the_whole_file_it_printed(events: list):
    reads = [e for e in events if isinstance(e, ToolCall) and e.tool == "read_file"]
    assert len(reads) == 2
    for call in reads:
        (read,) = infer(call).reads
        assert read.path == f"{ROOT}/main.py" and (read.start, read.end) == (1, 15)
        assert read.shown is not None and read.shown.lines[0] == "def main():"


def test_read_file_slice_note_names_its_lines():
    call = ToolCall("c", "read_file", {"file_path": "/r/x.py", "offset": 10, "limit": 2},
                    output="\nIMPORTANT: The file content has been truncated.\nStatus: Showing "
                           "lines 11-12 of 40 total lines.\nAction: To read more...\n\n"
                           "--- FILE CONTENT (truncated) ---\neleven\ntwelve\n")
    (read,) = gemini_read(call, "/r/x.py")
    assert (read.start, read.end) == (11, 12) and read.shown.lines == ("eleven", "twelve")


def test_listing_and_search_output():
    ls = ToolCall("c", "list_directory", {"path": "/r"},
                  output="Directory listing for /r:\n[DIR] src\nREADME.md\nsetup.py")
    assert gemini_ls(ls) == [Read("/r/README.md", listing=True), Read("/r/setup.py", listing=True)]
    grep = ToolCall("c", "search_file_content", {"pattern": "f", "path": "/r"},
                    output='Found 2 matches for pattern "f" in path "/r":\n---\nFile: a.py\n'
                           "L3: def f():\nL9:     f()\n---")
    (hit,) = gemini_grep(grep)
    assert hit.path == "/r/a.py" and hit.shown.numbers == (3, 9)
