"""Detection by content, not by the first line: bookkeeping lines a format is known to
open with are looked past, and a file nothing accepts is described in the error.

The opening lines are the shapes Claude Code 2.1 writes at the top of a transcript
(``custom-title``, ``permission-mode``, ``teleported-from``: their fields as third-party
readers of real transcripts parse them); what follows them is a real transcript.
"""

from __future__ import annotations

import json

import pytest
from fixture_paths import REAL

from streameval.errors import TraceFormatError
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.claude import ClaudeAdapter

TRANSCRIPT = REAL / "claude-session" / "claude-session__jnarowski__agentcmd__full-session-four.jsonl"
SESSION = "2d984148-cddb-4605-aac1-13e720fe613c"

OPENINGS = {
    "custom-title": {"type": "custom-title", "customTitle": "fix the sidebar", "sessionId": SESSION},
    "permission-mode": {"type": "permission-mode", "permissionMode": "default",
                        "sessionId": SESSION},
    "teleported-from": {"type": "teleported-from", "remoteSessionId": "session_01ABC",
                        "branch": "main", "messageCount": 3},
}


def _lines(*objs: dict) -> list[bytes]:
    return [json.dumps(o).encode() for o in objs]


@pytest.mark.parametrize("kind", sorted(OPENINGS))
def test_claude_transcript_opening_with_bookkeeping_is_detected(kind: str, tmp_path):
    real = TRANSCRIPT.read_bytes()
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b"\n".join(_lines(OPENINGS[kind])) + b"\n" + real)
    assert detect_format(read_head(trace)) == "claude"


def test_several_opening_lines_before_the_first_message(tmp_path):
    trace = tmp_path / "t.jsonl"
    opening = _lines(*OPENINGS.values(), {"type": "last-prompt", "lastPrompt": None,
                                          "sessionId": SESSION})
    trace.write_bytes(b"\n".join(opening) + b"\n" + TRANSCRIPT.read_bytes())
    assert detect_format(read_head(trace)) == "claude"


def test_a_file_of_bookkeeping_only_is_claude():
    """A ``teleported-from`` stub (a whole file of one line) is Claude Code's."""
    assert detect_format(_lines(OPENINGS["teleported-from"])) == "claude"


def test_bookkeeping_then_another_format_is_not_claude():
    """The first line that identifies a format decides, not the bookkeeping before it."""
    head = _lines(OPENINGS["custom-title"], {"type": "session_meta", "payload": {"id": "x"}})
    assert not ClaudeAdapter.detect(head)


def test_undetected_file_says_what_it_saw(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b'{"kind": "Mystery", "id": 1, "payload": {}}\n[1, 2]\nnot json at all\n')
    with pytest.raises(TraceFormatError) as err:
        detect_format(read_head(trace))
    message = str(err.value)
    assert "kind='Mystery'" in message and "keys kind, id, payload" in message
    assert "line 2: a JSON array" in message and "line 3: text 'not json at all'" in message
    assert "--format" in message


def test_empty_file_says_so(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b"\n\n")
    with pytest.raises(TraceFormatError, match="no non-empty line"):
        detect_format(read_head(trace))


def test_a_directory_that_is_no_conversation_is_no_trace(tmp_path):
    with pytest.raises(IsADirectoryError):
        read_head(tmp_path)
