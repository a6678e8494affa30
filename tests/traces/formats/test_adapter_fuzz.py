"""Property tests: no input makes an adapter raise, damage is counted, good lines survive.

Inputs are random bytes, prefixes of real fixture lines (a half-written last line, a
log wrapper cutting a line), and real fixture objects with fields dropped or replaced by
the wrong type. Around the damage sit well-formed lines of a known tool call; whatever
the damage, that call must still come out with its output (DESIGN.md: "Nothing is lost
that was well-formed"). Other adapters may add their own cases here.
"""

from __future__ import annotations

import orjson
import pytest
from fixture_paths import REAL  # noqa: E402
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, StatedContext, ToolCall, Usage
from streameval.traces.formats.claude import ClaudeAdapter
from streameval.traces.formats.codex import CodexAdapter

REASONS = {r.value for r in Reason}
EVENT_TYPES = (ToolCall, Usage, RunInfo, RunEnd, StatedContext, BadLine)
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _real_lines(*globs: str, max_bytes: int = 6000) -> list[bytes]:
    lines = []
    for pattern in globs:
        for path in sorted(REAL.glob(pattern)):
            lines += [ln for ln in path.read_bytes().split(b"\n") if 0 < len(ln) <= max_bytes]
    return lines


CLAUDE_LINES = _real_lines("claude-session/*.jsonl", "claude-stream/*.jsonl")
CODEX_LINES = _real_lines("codex-exec-json/*.jsonl", "codex-rollout/*.jsonl")


# --------------------------------------------------------------------------- the sandwich


def _claude_pair(call_id: str, output: str) -> tuple[bytes, bytes]:
    use = {"type": "assistant", "message": {"id": f"m-{call_id}", "content": [
        {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "/r/a.py"}}]}}
    result = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": call_id, "content": output}]}}
    return orjson.dumps(use), orjson.dumps(result)


def _codex_pair(call_id: str, output: str) -> tuple[bytes, bytes]:
    call = {"type": "response_item", "payload": {
        "type": "function_call", "name": "shell", "call_id": call_id,
        "arguments": '{"command": ["bash", "-lc", "cat a.py"]}'}}
    result = {"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": call_id, "output": output}}
    return orjson.dumps(call), orjson.dumps(result)


ADAPTERS = {
    "claude": (ClaudeAdapter, _claude_pair, CLAUDE_LINES),
    "codex": (CodexAdapter, _codex_pair, CODEX_LINES),
}


def _feed_sandwiched(kind: str, damage: list[bytes]) -> list:
    """Feed: open call A, the damage, answer A, then a whole call B; return all events."""
    adapter_cls, pair, _ = ADAPTERS[kind]
    a_use, a_result = pair("fuzz-sentinel-a", "output of A")
    b_use, b_result = pair("fuzz-sentinel-b", "output of B")
    adapter = adapter_cls()
    events: list = []
    for lineno, line in enumerate([a_use, *damage, a_result, b_use, b_result], 1):
        events += adapter.feed(line, lineno)
    return events + adapter.close()


def _check_events(events: list) -> None:
    for event in events:
        assert isinstance(event, EVENT_TYPES), event
        if isinstance(event, BadLine):
            assert event.reason in REASONS and event.message and event.lineno > 0
        if isinstance(event, ToolCall):
            assert isinstance(event.call_id, str) and isinstance(event.tool, str)
            assert isinstance(event.input, dict) and isinstance(event.is_error, bool)
            assert event.output is None or isinstance(event.output, str)
            assert event.cwd is None or isinstance(event.cwd, str)
            assert event.started_at is None or isinstance(event.started_at, float)
    calls = {}
    for event in events:
        if isinstance(event, ToolCall) and event.call_id.startswith("fuzz-sentinel"):
            assert event.call_id not in calls, "a call was emitted twice"
            calls[event.call_id] = event
    # B came whole after the damage: it must be intact. A was open across the damage:
    # damage that looks like a run boundary may flush it early, but it is never lost.
    assert calls["fuzz-sentinel-b"].output == "output of B"
    assert calls["fuzz-sentinel-a"].output in ("output of A", None)


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
@FUZZ
@given(damage=st.lists(st.binary(max_size=300), max_size=6))
def test_random_bytes_never_raise(kind: str, damage: list[bytes]):
    _check_events(_feed_sandwiched(kind, damage))


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_truncated_real_lines_are_counted_bad_lines(kind: str, data):
    adapter_cls, _, lines = ADAPTERS[kind]
    line = data.draw(st.sampled_from(lines))
    cut = data.draw(st.integers(min_value=1, max_value=len(line.rstrip()) - 1))
    events = adapter_cls().feed(line[:cut], 9)
    assert len(events) == 1 and isinstance(events[0], BadLine)
    assert events[0].reason in (Reason.MALFORMED_JSON.value, Reason.NOT_UTF8.value)
    assert events[0].lineno == 9
    _check_events(_feed_sandwiched(kind, [line[:cut]]))


_WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=False),
    st.text(max_size=20), st.sampled_from(["12", "-1", "", "null", "2025-99-99T99:99:99Z"]),
    st.lists(st.integers(-(2**40), 2**40), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(-9, 9),
                                                         max_size=3),
)


def _mutate(value, data, depth: int = 0):
    """Drop keys, swap values for wrong types, shuffle lists; recurse a few levels."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            action = data.draw(st.sampled_from(["keep", "keep", "recurse", "drop", "wrong"]))
            if action == "drop":
                continue
            if action == "wrong":
                out[key] = data.draw(_WRONG)
            elif action == "recurse" and depth < 4:
                out[key] = _mutate(item, data, depth + 1)
            else:
                out[key] = item
        return out
    if isinstance(value, list) and value and depth < 4:
        items = [_mutate(item, data, depth + 1) for item in value[:4]]
        return data.draw(st.permutations(items)) + value[4:]
    if depth > 0 and data.draw(st.booleans()):
        return data.draw(_WRONG)
    return value


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_real_objects_with_dropped_and_mistyped_fields_never_raise(kind: str, data):
    _, _, lines = ADAPTERS[kind]
    sources = data.draw(st.lists(st.sampled_from(lines), min_size=1, max_size=4))
    damage = [orjson.dumps(_mutate(orjson.loads(src), data)) for src in sources]
    _check_events(_feed_sandwiched(kind, damage))


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_the_other_formats_lines_never_raise(kind: str, data):
    other = CODEX_LINES if kind == "claude" else CLAUDE_LINES
    damage = data.draw(st.lists(st.sampled_from(other), max_size=5))
    _check_events(_feed_sandwiched(kind, damage))


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_detect_never_raises(kind: str, data):
    adapter_cls, _, lines = ADAPTERS[kind]
    sources = data.draw(st.lists(st.sampled_from(lines), min_size=1, max_size=3))
    head = [orjson.dumps(_mutate(orjson.loads(src), data)) for src in sources]
    head += data.draw(st.lists(st.binary(max_size=50), max_size=2))
    assert adapter_cls.detect(data.draw(st.permutations(head))) in (True, False)


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_overlong_line_is_line_too_long(kind: str, monkeypatch):
    from streameval.traces.formats import jsonl

    adapter_cls = ADAPTERS[kind][0]
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 64)
    monkeypatch.setattr(jsonl.decode_object, "__defaults__", (64,))
    (bad,) = adapter_cls().feed(b'{"type": "user", "pad": "' + b"x" * 100 + b'"}', 2)
    assert bad.reason == Reason.LINE_TOO_LONG.value


@pytest.mark.parametrize("kind", sorted(ADAPTERS))
def test_every_real_line_decodes_without_bad_lines(kind: str):
    """The real fixtures themselves are well-formed: zero bad lines, whole files."""
    adapter_cls = ADAPTERS[kind][0]
    pattern = ("claude-*/*.jsonl",) if kind == "claude" else ("codex-*/*.jsonl",)
    for path in sorted(REAL.glob(pattern[0])):
        adapter = adapter_cls()
        events = [e for n, ln in enumerate(path.read_bytes().split(b"\n"), 1)
                  for e in adapter.feed(ln, n)] + adapter.close()
        assert not [e for e in events if isinstance(e, BadLine)], path.name
