"""Every real fixture, its JSON values mutated (huge numbers, wrong types, nulls, deep
nesting, long strings), through its adapter in ``watch`` and in ``replay``: no exception
escapes, and both write the same records.

The runs are scored against the small demo repository (``meta.json`` names its
instance): the paths of the real traces are not in it, but every line goes through
detection, the adapter, inference, the edit map and the record, which is what a value
can break.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import orjson
import pytest
from claude_run import watcher
from fixture_paths import REAL

from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line

#: fixture folder -> the adapter every file in it is read with
FORMATS = {
    "claude-session": "claude", "claude-stream": "claude", "codex-exec-json": "codex",
    "codex-rollout": "codex", "harbor-atif": "atif", "mini-swe-agent": "miniswe",
    "swe-agent-traj": "sweagent", "openhands": "openhands", "openhands-events": "openhands",
    "openhands-sdk": "openhands", "gemini-session": "gemini",
}
FIXTURES = sorted(p for p in REAL.glob("*/*") if p.parent.name in FORMATS)


def _deep(n: int):
    value: object = "bottom"
    for _ in range(n):
        value = [value]
    return value


HOSTILE = [10**20, -(10**20), 2**70, 1.7e308, -1.7e308, 0, -1, None, "", "x" * 20_000,
           [], {}, True, _deep(200), {"a": _deep(50)}, "²", "1e999", "-0", 3.5]


def _mutate(value, rng: random.Random, p: float):
    if isinstance(value, dict):
        return {k: _mutate(v, rng, p) for k, v in value.items()}
    if isinstance(value, list):
        return [_mutate(v, rng, p) for v in value]
    if rng.random() < p:
        return rng.choice(HOSTILE)
    return value


def _mutated_copy(src: Path, dst: Path, seed: int) -> None:
    if src.is_dir():   # an SDK conversation directory: each event file mutated
        shutil.copytree(src, dst)
        for event in sorted(dst.rglob("event-*.json")):
            _mutated_copy(event, event.with_suffix(".tmp"), seed)
            event.with_suffix(".tmp").replace(event)
        return
    rng = random.Random(f"{src.name}:{seed}")
    p = 0.04 if seed == 0 else 0.3
    raw = src.read_bytes()
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    if doc is not None and not src.name.endswith(".jsonl"):
        dst.write_text(json.dumps(_mutate(doc, rng, p)))
        return
    lines = []
    for line in raw.split(b"\n"):
        try:
            lines.append(json.dumps(_mutate(orjson.loads(line), rng, p)).encode())
        except orjson.JSONDecodeError:
            lines.append(line)
    dst.write_bytes(b"\n".join(lines))


def _by_run(lines: list[bytes]) -> dict[str, bytes]:
    return {orjson.loads(line)["run_id"]: line + b"\n" for line in lines}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name[:50]}")
def test_mutated_values_watch_equals_replay(env, tmp_path, fixture, seed):
    s, runs, res = env
    d = runs / "run"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "fuzz"}))
    trace = d / fixture.name
    _mutated_copy(fixture, trace, seed)
    fmt = FORMATS[fixture.parent.name]

    replayed = [record_line(r) for r in evaluate_trace(trace, res, fmt=fmt, root=runs)]
    assert replayed, "replay wrote no record"
    for line in replayed:
        orjson.loads(line)

    w = watcher(runs, res, tmp_path, fmt=fmt, globs=(fixture.name,), idle=0.0)
    w.scan()
    w.poll_all()
    w.tick()
    w.close()
    out = tmp_path / "out.jsonl"
    watched = out.read_bytes().splitlines() if out.exists() else []
    assert _by_run(watched) == _by_run([r.rstrip(b"\n") for r in replayed])
    shutil.rmtree(d)
