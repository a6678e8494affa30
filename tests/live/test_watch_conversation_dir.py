"""An OpenHands SDK conversation directory (one ``event-*.json`` per event) watched as one
run while it grows event by event, and its record the same bytes replay writes.

The events are a real conversation persisted by the SDK (OpenHands/software-agent-sdk,
provenance in ``tests/fixtures/real/SOURCES.md``), written into the watched directory one
file at a time, as the SDK writes them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from claude_run import watcher
from fixture_paths import REAL

from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line

CONVERSATION = REAL / "openhands-sdk" / \
    "openhands-sdk__OpenHands__software-agent-sdk__event-json-to-openai-messages"


def _events() -> list[Path]:
    return sorted((CONVERSATION / "events").glob("event-*.json"))


def _conversation(runs: Path, instance: str) -> Path:
    """An empty conversation as the SDK starts one: its state, an empty events/."""
    d = runs / "conv"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": "conv-1"}))
    conv = d / "cd94562403b9487ebdd4018e3f531dfd"
    (conv / "events").mkdir(parents=True)
    shutil.copy(CONVERSATION / "base_state.json", conv / "base_state.json")
    return conv


def test_conversation_grows_event_by_event_into_one_run(env, tmp_path):
    s, runs, res = env
    conv = _conversation(runs, s.instance)
    w = watcher(runs, res, tmp_path)
    w.scan()
    assert list(w.followers) == [conv]   # the directory is the trace, not its files
    seen = []
    for event in _events():
        target = conv / "events" / event.name
        target.write_bytes(event.read_bytes())
        w.changed(target)
        runs_now = list(w.table.runs.values())
        assert len(runs_now) == 1   # one run however many event files
        seen.append(runs_now[0].session.extras.tool_calls)
    # system prompt, message, terminal action, its observation, finish, its
    # observation, two messages: a call counts once its answer is written
    assert seen == [0, 0, 0, 1, 1, 2, 2, 2]
    w.tick()
    w.close()
    watched = (tmp_path / "out.jsonl").read_bytes().splitlines()
    replayed = [record_line(r).rstrip(b"\n") for r in evaluate_trace(conv, res, root=runs)]
    assert watched == replayed
    record = json.loads(watched[0])
    assert record["instance_id"] == s.instance and record["run_id"] == "conv-1"


def test_half_written_event_file_waits_for_its_end(env, tmp_path):
    s, runs, res = env
    conv = _conversation(runs, s.instance)
    events = _events()
    for event in events[:3]:
        (conv / "events" / event.name).write_bytes(event.read_bytes())
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    answer = events[3].read_bytes()   # the terminal call's observation
    target = conv / "events" / events[3].name
    target.write_bytes(answer[: len(answer) // 2])
    w.changed(target)
    run = next(iter(w.table.runs.values()))
    assert run.session.extras.tool_calls == 0
    assert run.session.extras.bad_lines == {}   # not read yet, so nothing malformed
    target.write_bytes(answer)
    w.changed(target)
    assert run.session.extras.tool_calls == 1
    assert run.session.extras.bad_lines == {}


def test_event_files_in_replayed_directory_make_one_trace(env, tmp_path):
    from streameval.runs.batch import iter_trace_files

    s, runs, _res = env
    conv = _conversation(runs, s.instance)
    for event in _events():
        (conv / "events" / event.name).write_bytes(event.read_bytes())
    assert list(iter_trace_files(runs)) == [conv]
