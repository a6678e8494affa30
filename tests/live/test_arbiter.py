"""What the workers of ``watch --workers N`` share, kept by their supervisor
(live/arbiter.py): one run id per run whichever worker asks, the bare one where one
watcher gives it, the same after a worker died; one worker per path."""

from __future__ import annotations

from pathlib import Path

from streameval.live.arbiter import Arbiter
from streameval.live.claims import ClaimLog
from streameval.traces.identity import RunIds, suffixed


def _answer(arbiter: Arbiter, worker: int, m: dict) -> dict:
    [(to, answer)] = arbiter.handle(worker, m)
    assert to == worker
    return answer


def test_the_bare_id_is_the_first_trace_in_walk_order_whichever_worker_asks_first(tmp_path):
    """Two workers declare the ids their traces' first runs ask for; neither is answered
    before both have; then the later trace's worker asks first and gets the suffix."""
    a = Arbiter(tmp_path / "cp.json", tmp_path / "runs", 2)
    # worker 1 holds z/ (later in the walk) and r/ (whose file comes before the folders)
    assert a.handle(1, {"declare": [["hidden", "z/trace.jsonl", False],
                                    ["hidden", "r.jsonl", False]]}) == []
    assert a.handle(0, {"declare": [["hidden", "a/trace.jsonl", False],
                                    ["alone", "b/trace.jsonl", False]]}) == \
        [(0, {"ok": True}), (1, {"ok": True})]
    z = _answer(a, 1, {"claim": ["hidden", "z/trace.jsonl", "i"]})
    first = _answer(a, 0, {"claim": ["hidden", "a/trace.jsonl", "i"]})
    r = _answer(a, 1, {"claim": ["hidden", "r.jsonl", "i"]})
    # one watcher walks r.jsonl (a file of the root) before the folders a/ and z/
    assert r["id"] == "hidden"
    assert first["id"] == suffixed("hidden", "a/trace.jsonl", "i")
    assert z["id"] == suffixed("hidden", "z/trace.jsonl", "i")
    assert _answer(a, 0, {"claim": ["alone", "b/trace.jsonl", "i"]})["id"] == "alone"


def test_a_dead_workers_successor_gets_its_ids_and_the_rest_are_freed_once_it_started(tmp_path):
    a = Arbiter(None, tmp_path, 2)
    for w in (0, 1):
        a.handle(w, {"declare": []})
        a.handle(w, {"started": True})
    assert _answer(a, 0, {"claim": ["x", "a/trace.jsonl", "i"]})["id"] == "x"
    assert _answer(a, 0, {"claim": ["y", "b/trace.jsonl", "i"]})["id"] == "y"
    assert _answer(a, 0, {"hold": "/r/a/trace.jsonl"}) == {"ok": True}
    a.lost(0)
    # while worker 0 is down, its ids stay its own: another run asking gets the suffix
    assert _answer(a, 1, {"claim": ["x", "c/trace.jsonl", "i"]})["id"] != "x"
    assert _answer(a, 1, {"hold": "/r/a/trace.jsonl"}) == {"ok": False}
    # its successor reads a/ again, not b/ (gone meanwhile)
    assert _answer(a, 0, {"declare": [["x", "a/trace.jsonl", False]]}) == {"ok": True}
    assert _answer(a, 0, {"claim": ["x", "a/trace.jsonl", "i"]})["id"] == "x"
    assert _answer(a, 0, {"hold": "/r/a/trace.jsonl"}) == {"ok": True}
    a.handle(0, {"started": True})
    assert _answer(a, 1, {"claim": ["y", "d/trace.jsonl", "i"]})["id"] == "y"   # freed


def test_one_worker_per_path_and_a_move_keeps_it(tmp_path):
    a = Arbiter(None, tmp_path, 2)
    assert _answer(a, 0, {"hold": "/r/a/trace.jsonl"}) == {"ok": True}
    assert _answer(a, 1, {"hold": "/r/a/trace.jsonl"}) == {"ok": False}
    a.handle(0, {"moved": ["/r/a/trace.jsonl", "/r/b/trace.jsonl"]})
    assert _answer(a, 1, {"hold": "/r/a/trace.jsonl"}) == {"ok": True}
    assert _answer(a, 1, {"hold": "/r/b/trace.jsonl"}) == {"ok": False}
    a.handle(0, {"let_go": "/r/b/trace.jsonl"})
    assert _answer(a, 1, {"hold": "/r/b/trace.jsonl"}) == {"ok": True}


def test_the_ids_survive_the_supervisor_and_a_watcher_of_one_worker_reads_them(tmp_path):
    cp = tmp_path / "cp.json"
    a = Arbiter(cp, tmp_path / "runs", 2)
    for w in (0, 1):
        a.handle(w, {"declare": []})
    _answer(a, 0, {"claim": ["x", "a/trace.jsonl", "i"]})
    second = _answer(a, 1, {"claim": ["x", "b/trace.jsonl", "i"]})["id"]
    a.close()
    # started again (kill -9 of the whole watch: the claims were appended as made)
    b = Arbiter(cp, tmp_path / "runs", 2)
    b.restore()
    for w in (0, 1):
        b.handle(w, {"declare": [["x", "b/trace.jsonl", False], ["x", "a/trace.jsonl", False]][w:w + 1]})
    assert _answer(b, 1, {"claim": ["x", "a/trace.jsonl", "i"]})["id"] == "x"
    assert _answer(b, 0, {"claim": ["x", "b/trace.jsonl", "i"]})["id"] == second
    b.close()
    ids = RunIds()
    assert ClaimLog(ids, cp, tmp_path / "runs").read_since() == 2   # --workers 1 next time
    assert ids.claim("x", "b/trace.jsonl", "i") == second
    assert Path(f"{cp}.claims").read_bytes().count(b"\n") == 3
