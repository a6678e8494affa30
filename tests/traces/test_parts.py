"""Traces of several files (``traces.parts``) and a conversation directory read as lines
(``traces.eventdir``), on the real SDK conversation of ``tests/fixtures/real``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fixture_paths import REAL

from streameval.traces.eventdir import DirectoryTail
from streameval.traces.parts import event_files, is_conversation, trace_of

CONVERSATION = REAL / "openhands-sdk" / \
    "openhands-sdk__OpenHands__software-agent-sdk__event-json-to-openai-messages"


def test_which_trace_a_file_is_part_of(tmp_path: Path):
    conv = tmp_path / "conv"
    (conv / "events").mkdir(parents=True)
    event = conv / "events" / "event-00000-x.json"
    event.write_text("{}")
    assert trace_of(event) == conv and trace_of(conv / "base_state.json") == conv
    assert trace_of(tmp_path / "event-00000-x.json") == tmp_path / "event-00000-x.json"
    sub = tmp_path / "s1" / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text("")
    assert trace_of(sub) == sub                       # read alone: its own trace
    (tmp_path / "s1.jsonl").write_text("")
    assert trace_of(sub) == tmp_path / "s1.jsonl"     # its session is there: part of it
    assert is_conversation(conv) and not is_conversation(tmp_path / "s1")


def test_directory_tail_reads_event_files_in_order_as_lines(tmp_path: Path):
    conv = tmp_path / "conv"
    shutil.copytree(CONVERSATION, conv)
    tail = DirectoryTail(conv)
    batch = tail.poll()
    names = [f.name for f in event_files(conv)]
    assert len(batch.lines) == len(names) == 8
    assert [n for _line, n in batch.lines] == list(range(1, 9))
    for (line, _n), name in zip(batch.lines, names):
        assert b"\n" not in line
        assert json.loads(line) == json.loads((conv / "events" / name).read_bytes())
    assert tail.poll().lines == [] and tail.backlog == 0


def test_directory_tail_holds_a_half_written_event_and_sees_rewrites(tmp_path: Path):
    conv = tmp_path / "conv"
    (conv / "events").mkdir(parents=True)
    events = sorted((CONVERSATION / "events").glob("event-*.json"))
    tail = DirectoryTail(conv)
    (conv / "events" / events[0].name).write_bytes(events[0].read_bytes())
    half = events[1].read_bytes()[:50]
    (conv / "events" / events[1].name).write_bytes(half)
    assert [n for _l, n in tail.poll().lines] == [1]
    assert tail.pending == len(half)
    assert [n for _l, n in tail.poll(final=True).lines] == [2]   # given as it is at the end
    (conv / "events" / events[0].name).unlink()
    assert tail.poll().status == "truncated"
