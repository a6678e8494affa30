"""Fuzzing the miniswe, sweagent(-checkpoints) and openhands adapters.

Whatever bytes arrive (random, cut short, real documents with fields dropped, shuffled
or of the wrong type), ``feed``/``close`` must not raise and every bad input must come
out as a ``BadLine`` with a known ``Reason`` (DESIGN.md: bad input never stops the stream).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, StatedContext, ToolCall, Usage
from streameval.traces.formats.miniswe import MiniSweAdapter
from streameval.traces.formats.openhands import OpenHandsAdapter
from streameval.traces.formats.sweagent import SweAgentAdapter, SweAgentCheckpointsAdapter

ADAPTERS = (MiniSweAdapter, SweAgentAdapter, SweAgentCheckpointsAdapter, OpenHandsAdapter)
REASONS = {r.value for r in Reason}
EVENT_TYPES = (ToolCall, Usage, RunInfo, RunEnd, StatedContext, BadLine)
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SAMPLES = {  # adapter -> a real fixture (the smaller ones, to keep examples quick)
    MiniSweAdapter: ("mini-swe-agent",
                     "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__django__django-11603.traj.json"),
    SweAgentAdapter: ("swe-agent-traj",
                      "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.traj"),
    SweAgentCheckpointsAdapter: ("swe-agent-traj",
                                 "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.checkpoints.jsonl"),
    OpenHandsAdapter: ("openhands", "openhands__nunu0404__Python_OpenHands__multi_swe_bench-examples-output.jsonl"),
}
_CACHE: dict[type, bytes] = {}


def _sample(real_fixtures: Path, cls: type) -> bytes:
    if cls not in _CACHE:
        sub, name = SAMPLES[cls]
        _CACHE[cls] = (real_fixtures / sub / name).read_bytes()
    return _CACHE[cls]


def feed_all(cls: type, data: bytes) -> list:
    adapter = cls()
    events = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        events += adapter.feed(line, lineno)
    events += adapter.close()
    check_events(events)
    return events


def check_events(events: list) -> None:
    for ev in events:
        assert isinstance(ev, EVENT_TYPES)
        if isinstance(ev, BadLine):
            assert ev.reason in REASONS and ev.message
        elif isinstance(ev, ToolCall):
            assert isinstance(ev.tool, str) and isinstance(ev.input, dict)
            assert ev.output is None or isinstance(ev.output, str)
        elif isinstance(ev, RunEnd):
            assert isinstance(ev.reason, str) and (ev.patch is None or isinstance(ev.patch, str))


# --------------------------------------------------------------------------- random bytes


@pytest.mark.parametrize("cls", ADAPTERS, ids=lambda c: c.format)
@FUZZ
@given(lines=st.lists(st.binary(max_size=200), max_size=12))
def test_random_bytes_never_raise(cls: type, lines: list[bytes]):
    feed_all(cls, b"\n".join(lines))


@pytest.mark.parametrize("cls", ADAPTERS, ids=lambda c: c.format)
@FUZZ
@given(text=st.text(alphabet=st.sampled_from('{}[]",:0123456789 \n\\abtrue-nulfs'), max_size=300))
def test_json_like_noise_never_raises(cls: type, text: str):
    feed_all(cls, text.encode())


# --------------------------------------------------------------------------- truncation


@pytest.mark.parametrize("cls", ADAPTERS, ids=lambda c: c.format)
@FUZZ
@given(frac=st.floats(min_value=0.0, max_value=1.0))
def test_prefix_of_a_real_trace(real_fixtures: Path, cls: type, frac: float):
    data = _sample(real_fixtures, cls)
    cut = int(len(data) * frac)
    events = feed_all(cls, data[:cut])
    if cls.document and data[:cut].strip() and cut < len(data.rstrip()):
        # a cut document is one counted BadLine and nothing invented
        assert [type(e) for e in events] == [BadLine]
        assert events[0].reason in (Reason.PARTIAL_LINE.value, Reason.MALFORMED_JSON.value)


# --------------------------------------------------------------------------- mutated documents

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


def _mutate(draw, node: Any, depth: int = 0) -> Any:
    """Walk down a random path and drop, replace or shuffle what is found there."""
    if depth < 6 and isinstance(node, (dict, list)) and node and draw(st.booleans()):
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)))
            op = draw(st.sampled_from(["descend", "drop", "replace"]))
            if op == "drop":
                return {k: v for k, v in node.items() if k != key}
            child = draw(JSON_VALUES) if op == "replace" else _mutate(draw, node[key], depth + 1)
            return {**node, key: child}
        index = draw(st.integers(0, len(node) - 1))
        op = draw(st.sampled_from(["descend", "drop", "replace", "shuffle"]))
        if op == "shuffle":
            return draw(st.permutations(node))
        if op == "drop":
            return node[:index] + node[index + 1:]
        child = draw(JSON_VALUES) if op == "replace" else _mutate(draw, node[index], depth + 1)
        return node[:index] + [child] + node[index + 1:]
    return draw(JSON_VALUES)


@pytest.mark.parametrize("cls", (MiniSweAdapter, SweAgentAdapter), ids=lambda c: c.format)
@FUZZ
@given(data=st.data())
def test_mutated_real_document(real_fixtures: Path, cls: type, data):
    doc = json.loads(_sample(real_fixtures, cls))
    for _ in range(data.draw(st.integers(1, 4))):
        doc = _mutate(data.draw, doc)
    feed_all(cls, json.dumps(doc, indent=2).encode())


@pytest.mark.parametrize("cls", (OpenHandsAdapter, SweAgentCheckpointsAdapter), ids=lambda c: c.format)
@FUZZ
@given(data=st.data())
def test_mutated_real_lines(real_fixtures: Path, cls: type, data):
    lines = [line for line in _sample(real_fixtures, cls).split(b"\n") if line.strip()]
    index = data.draw(st.integers(0, len(lines) - 1))
    obj = json.loads(lines[index])
    for _ in range(data.draw(st.integers(1, 4))):
        obj = _mutate(data.draw, obj)
    lines[index] = json.dumps(obj).encode()
    events = feed_all(cls, b"\n".join(lines))
    if cls is OpenHandsAdapter:
        # the untouched instances are all still there, framed
        ids = [e.instance_id for e in events if isinstance(e, RunInfo)]
        assert len(ids) >= len(lines) - 1
