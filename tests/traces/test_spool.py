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


def _files(root):
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def test_without_io_only_what_needs_no_disk_is_answered(tmp_path):
    # The event loop asks first with io=False: a new run, lines to write or a run in
    # use by a thread are None (the caller goes to a thread), and the disk is untouched
    from streameval.traces.ingest.spool import Entry

    spool = Spool(tmp_path / "ingest")
    call = [Entry("PostToolUse:t1", [b'{"a": 1}', b'{"b": 2}'])]
    assert spool.append("claude-hooks", "s1", [], {}, io=False) is None     # a new run
    assert not (tmp_path / "ingest" / "claude-hooks").exists()
    made = spool.append("claude-hooks", "s1", [], {"agent": "x"})           # made by a thread
    assert (made.before, made.size) == (0, 0)
    on_disk = _files(tmp_path)
    assert spool.append("claude-hooks", "s1", call, {}, io=False) is None   # lines to write
    assert _files(tmp_path) == on_disk
    stored = spool.append("claude-hooks", "s1", call, {})
    assert (stored.accepted, stored.before, stored.size) == (2, 0, 18)
    on_disk = _files(tmp_path)
    again = spool.append("claude-hooks", "s1", call, {}, io=False)          # a retry
    assert (again.accepted, again.duplicates, again.before, again.size) == (0, 1, 18, 18)
    pre = spool.append("claude-hooks", "s1", [], {}, io=False)              # a PreToolUse
    assert (pre.accepted, pre.before, pre.size) == (0, 18, 18)
    run = spool._open["claude-hooks"]["s1"]
    with run.lock:                                                          # a thread writing
        assert spool.append("claude-hooks", "s1", [], {}, io=False) is None
    assert _files(tmp_path) == on_disk
    assert run.busy == 0


def test_a_symlinked_trace_is_refused(tmp_path):
    import pytest

    from streameval.traces.ingest.spool import Entry, SpoolError

    spool = Spool(tmp_path / "ingest")
    spool.append("claude-hooks", "s1", [], {})
    trace = tmp_path / "ingest" / "claude-hooks" / "s1" / "trace.jsonl"
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"")
    trace.unlink()
    trace.symlink_to(elsewhere)
    with pytest.raises(SpoolError) as err:
        spool.append("claude-hooks", "s1", [Entry("k", [b"{}"])], {})
    assert err.value.status == 409 and "symlink" in str(err.value)
    assert elsewhere.read_bytes() == b""
