"""The spool's memory: what an open run keeps of the requests that fed it."""

from __future__ import annotations

import json

from fixture_paths import PUSH

from streameval.traces.ingest import otlp
from streameval.traces.ingest.spool import Spool


def test_an_open_runs_keys_share_no_memory_with_the_request(tmp_path):
    # A key kept as the decoded body's own string pins that body's allocator pages for
    # as long as the run is open (one call id every few KB of objects); the spool keeps
    # copies. Checked by identity: not one kept key is an object of the request.
    body = json.loads((PUSH / "codex-0.169.0.otlp-logs.json").read_text())
    spool = Spool(tmp_path / "ingest")
    given, kept = [], set()
    for req in body if isinstance(body, list) else [body]:
        records = otlp.decode(json.dumps(req).encode(), "application/json")
        for run in otlp.runs(records):
            given += [e.key for e in run.entries if e.key is not None]
            spool.append(run.source, run.session_id, run.entries, {})
            kept |= spool._open[run.source][run.session_id].keys
    assert given and set(given) <= kept                 # the same keys, by value
    assert {id(k) for k in kept}.isdisjoint(id(k) for k in given)


def test_a_retry_is_still_stored_once_with_copied_keys(tmp_path):
    body = json.loads((PUSH / "codex-0.169.0.otlp-logs.json").read_text())
    req = (body if isinstance(body, list) else [body])[0]
    spool = Spool(tmp_path / "ingest")
    rounds = []
    for _ in range(2):   # the same export twice: decoded anew, other string objects
        runs = otlp.runs(otlp.decode(json.dumps(req).encode(), "application/json"))
        keyed = sum(1 for run in runs for e in run.entries if e.key is not None)
        rounds.append((keyed, [spool.append(run.source, run.session_id, run.entries, {})
                               for run in runs]))
    (keyed, first), (_, again) = rounds
    assert keyed and sum(s.accepted for s in first) > 0
    assert sum(s.accepted for s in again) == 0
    assert sum(s.duplicates for s in again) == keyed
