"""Traces of several files (``traces.parts``) and a conversation directory read as lines
(``traces.eventdir``), on the real SDK conversation of ``tests/fixtures/real``."""

from __future__ import annotations

import json
import os
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


def test_directory_tail_passes_over_an_event_file_it_may_not_read(tmp_path: Path):
    """An event file its ``admit`` refuses (the watcher's: a link out of the root) is
    passed over, and the events after it are read; 102ce86 read every event file the
    listing named, through any link."""
    conv = tmp_path / "conv"
    (conv / "events").mkdir(parents=True)
    events = sorted((CONVERSATION / "events").glob("event-*.json"))[:3]
    outside = tmp_path / "outside.json"
    outside.write_bytes(events[1].read_bytes())
    for k, e in enumerate(events):
        if k == 1:
            (conv / "events" / e.name).symlink_to(outside)
        else:
            (conv / "events" / e.name).write_bytes(e.read_bytes())
    asked = []

    def admit(fd: int, path: str) -> bool:
        asked.append(path)
        return not os.path.samestat(os.fstat(fd), os.stat(outside))

    batch = DirectoryTail(conv, admit=admit).poll(final=True)
    assert [n for _line, n in batch.lines] == [1, 3] and len(asked) == 3
