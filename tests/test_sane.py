"""One absurd value in a trace never stops a stream or makes a record unwritable.

Every number of a real trace shape (token counts, costs, timestamps, Read offsets and
limits, turn counts) is swapped for a value no run produces: the watcher and replay must
both write one record, equal byte for byte, and count what they clamped.
"""

from __future__ import annotations

import json
import math

import orjson
import pytest
from claude_run import APP, UTIL, Claude, append, started
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval import sane
from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line

ABSURD = [10**20, 1e20, -(10**20), 2**70, 1.7e308, -1.7e308, 10**300, 2**63, -1, 0]


def _swap_numbers(value, new):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return new
    if isinstance(value, dict):
        return {k: _swap_numbers(v, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_numbers(v, new) for v in value]
    return value


def _hostile_lines(new) -> list[bytes]:
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 2, 4), c.result()]
    # json, not orjson: orjson refuses integers beyond 64 bits, and an agent's writer may not
    return [json.dumps(_swap_numbers(json.loads(line), new)).encode() for line in lines]


@pytest.mark.parametrize("new", ABSURD, ids=str)
def test_every_number_absurd_watch_and_replay_write_the_same_record(env, tmp_path, new):
    s, runs, res = env
    d = runs / s.instance
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r", "pid": 2**40}))
    trace = d / "trace.jsonl"
    append(trace, *_hostile_lines(new))
    w = started(runs, res, tmp_path)
    w.tick()
    watched = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert len(watched) == 1
    [replayed] = evaluate_trace(trace, res)
    assert watched[0] + b"\n" == record_line(replayed)
    rec = orjson.loads(watched[0])
    assert "error" not in rec, rec
    assert rec["num_steps"] == 2
    # file level never depends on numbers: both files were shown
    assert rec["final"]["file"]["coverage"] == 1.0


def test_a_billion_token_count_is_clamped_and_counted(env, tmp_path):
    from collections import Counter

    s, runs, res = env
    trace = tmp_path / "t.jsonl"
    append(trace, *_hostile_lines(10**20))
    with sane.counting(Counter()) as clamped:
        [rec] = evaluate_trace(trace, res)
    assert clamped["tokens"] > 0
    orjson.dumps(rec)   # writable without the fallback
    [again] = evaluate_trace(trace, res)   # nobody counting: nothing is kept anywhere
    assert again == rec


def test_pid_out_of_range_is_no_pid(env, tmp_path):
    from streameval.traces.identity import identify

    s, runs, res = env
    for bad in (2**31, 2**40, 1, 0, -5, True, "123", 1.5):
        d = tmp_path / f"p{abs(hash(str(bad)))}"
        d.mkdir()
        (d / "meta.json").write_text(json.dumps({"pid": bad}))
        assert identify(d / "trace.jsonl").pid is None, bad
    d = tmp_path / "good"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"pid": 4242}))
    assert identify(d / "trace.jsonl").pid == 4242


# ------------------------------------------------------------------ the value rules


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_JSONISH)
def test_jsonable_always_writes_and_keeps_what_fits(value):
    out = orjson.loads(orjson.dumps(sane.jsonable(value)))
    try:
        fits = orjson.loads(orjson.dumps(value))
    except TypeError:
        return
    # a value orjson could already write comes back as it would have been written
    assert out == fits


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(), st.floats(), st.text(max_size=40), st.none(), st.booleans()))
def test_count_is_always_in_range(value):
    n = sane.count(value)
    assert isinstance(n, int) and 0 <= n <= sane.MAX_COUNT
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= sane.MAX_COUNT:
        assert n == value


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(), st.floats()))
def test_cost_is_finite_and_bounded_or_unknown(value):
    c = sane.cost(value)
    assert c is None or (math.isfinite(c) and 0 <= c <= sane.MAX_COST)
    if isinstance(value, float) and 0 <= value <= sane.MAX_COST:
        assert c == value


@pytest.mark.parametrize("value,expected", [
    (1_700_000_000, 1_700_000_000.0), (1_700_000_000_000, 1_700_000_000.0),
    (10**30, None), (-5, None), ("2026-11-24T00:00:00Z", 1795478400.0),
    ("99999-01-01T00:00:00", None)])
def test_timestamps(value, expected):
    from streameval.traces.formats.jsonl import parse_timestamp

    assert parse_timestamp(value) == expected



def test_a_watcher_counts_what_it_clamped_in_its_own_statistics(env, tmp_path):
    """Clamped values are counted by the watcher that read them (its RunTable's
    statistics, exported as streameval_clamped_values_total), not in a process global:
    two watchers in one process keep their own counts."""
    from claude_run import watcher
    from prometheus_client import CollectorRegistry

    from streameval.live.exporter import RunsCollector

    s, runs, res = env
    (runs / "r1").mkdir()
    append(runs / "r1" / "trace.jsonl", *_hostile_lines(10**20))
    w = watcher(runs, res, tmp_path)
    quiet = watcher(tmp_path / "empty", res, tmp_path)
    w.scan()
    w.poll_all()
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    assert reg.get_sample_value("streameval_clamped_values_total", {"reason": "tokens"}) >= 1
    assert quiet.table.stats.clamped == {}
