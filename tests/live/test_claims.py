"""The run ids a watcher gave, kept across a restart (issue 31): the checkpoint's journal
and ``<checkpoint>.claims``, appended as each id is given, read back by a new watcher
before it reads any trace."""

from __future__ import annotations

import orjson

from streameval.live.claims import ClaimLog, claims_path
from streameval.traces.identity import RunIds


def _log(tmp_path, root="/runs") -> tuple[RunIds, ClaimLog]:
    ids = RunIds()
    return ids, ClaimLog(ids, tmp_path / "cp.json", tmp_path / root.strip("/"))


def test_a_claim_is_on_disk_as_it_is_made_and_read_back_in_order(tmp_path):
    ids, log = _log(tmp_path)
    assert ids.claim("x", "a/trace.jsonl", "i") == "x"
    second = ids.claim("x", "b/trace.jsonl", "i")
    path = claims_path(tmp_path / "cp.json")
    assert path.read_bytes().count(b"\n") == 3   # the root, then one line per claim
    again, log2 = _log(tmp_path)
    assert log2.read_since() == 2
    # b/ asks first this time: it keeps its suffixed id, a/ its bare one
    assert again.claim("x", "b/trace.jsonl", "i") == second
    assert again.claim("x", "a/trace.jsonl", "i") == "x"


def test_a_save_moves_the_claims_into_the_checkpoint_and_starts_the_file_afresh(tmp_path):
    ids, log = _log(tmp_path)
    ids.claim("x", "a/trace.jsonl", "i")
    journal = log.journal()
    log.saved()
    path = claims_path(tmp_path / "cp.json")
    assert path.read_bytes().count(b"\n") == 1
    ids.claim("x", "b/trace.jsonl", "i")
    again, log2 = _log(tmp_path)
    log2.restore_journal(orjson.loads(orjson.dumps(journal)))
    assert log2.read_since() == 1
    assert again.claim("x", "b/trace.jsonl", "i") != "x"
    assert again.claim("x", "a/trace.jsonl", "i") == "x"


def test_a_torn_last_line_is_skipped_and_the_next_claim_is_not_glued_to_it(tmp_path):
    ids, log = _log(tmp_path)
    ids.claim("x", "a/trace.jsonl", "i")
    log.close()
    path = claims_path(tmp_path / "cp.json")
    with open(path, "ab") as fh:
        fh.write(b'["x", "torn')          # a crash mid-append
    again, log2 = _log(tmp_path)
    assert log2.read_since() == 1
    again.claim("y", "c/trace.jsonl", "i")   # appended after the torn bytes
    third, log3 = _log(tmp_path)
    assert log3.read_since() == 2


def test_claims_of_another_root_or_malformed_entries_are_not_used(tmp_path):
    ids, log = _log(tmp_path, "/one")
    ids.claim("x", "a/trace.jsonl", "i")
    other, log2 = _log(tmp_path, "/two")
    assert log2.read_since() == 0
    assert other.claim("x", "b/trace.jsonl", "i") == "x"
    # and that file is started afresh for this root, not appended to
    third, log3 = _log(tmp_path, "/two")
    assert log3.read_since() == 1
    log3.restore_journal([["x", "a"], [1, 2, 3, 4], "junk", ["y", "d/trace.jsonl", "i", "y"]])
    assert third.claim("y", "e/trace.jsonl", "i") != "y"
    log3.restore_journal({"not": "a list"})


def test_without_a_checkpoint_nothing_is_kept(tmp_path):
    ids = RunIds()
    log = ClaimLog(ids, None, tmp_path)
    ids.claim("x", "a/trace.jsonl", "i")
    log.saved()
    assert log.read_since() == 0
    assert list(tmp_path.iterdir()) == []


def test_a_claim_that_cannot_be_kept_is_counted_and_the_run_still_gets_its_id(tmp_path, caplog):
    from collections import Counter

    claims_path(tmp_path / "cp.json").mkdir()   # nothing can be appended there
    errors: Counter = Counter()
    ids = RunIds()
    ClaimLog(ids, tmp_path / "cp.json", tmp_path, errors)
    assert ids.claim("x", "a/trace.jsonl", "i") == "x"
    assert ids.claim("y", "b/trace.jsonl", "i") == "y"
    assert errors["claims"] == 2
    assert sum("cannot append a run id" in r.getMessage() for r in caplog.records) == 1


def test_claims_written_afresh_hold_only_the_ids_held_and_a_watcher_reads_them(tmp_path):
    """The supervisor of several workers keeps no checkpoint: its claims file is written
    afresh (``compact``); a watcher of one worker started later reads it as its own."""
    ids, log = _log(tmp_path)
    ids.claim("x", "a/trace.jsonl", "i")
    second = ids.claim("x", "b/trace.jsonl", "i")
    ids.claim("y", "c/trace.jsonl", "i")
    ids.release("y")                                   # its run left memory
    log.compact()
    path = claims_path(tmp_path / "cp.json")
    assert path.read_bytes().count(b"\n") == 3         # the root and the two held
    ids.claim("z", "d/trace.jsonl", "i")               # appended after it
    assert path.read_bytes().count(b"\n") == 4
    again, log2 = _log(tmp_path)
    assert log2.read_since() == 3
    assert again.claim("x", "b/trace.jsonl", "i") == second
    assert again.claim("x", "a/trace.jsonl", "i") == "x"


def test_a_claims_file_whose_first_line_is_no_header_is_another_roots(tmp_path):
    """102ce86 skipped a first line that did not parse, and with it the root check: the
    claims after it were taken whatever root they were made for."""
    ids, log = _log(tmp_path, "/two")
    claims_path(tmp_path / "cp.json").write_bytes(
        b'{"root": "/one", torn\n["x", "b/trace.jsonl", "i", "x~given-by-one"]\n')
    assert log.read_since() == 0
    assert ids.claim("x", "b/trace.jsonl", "i") == "x"


def test_the_checkpoint_of_another_root_gives_no_run_ids(tmp_path):
    """102ce86 checked the claims file's root but took the checkpoint's journals (its run
    ids, its abort decisions) whatever root it was written for: a --state-dir shared by
    two watchers gave one watcher's run ids to the other's runs."""
    from streameval.live.outputs import checkpoint_bytes, read_checkpoint

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    journal = {"run_ids": [["x", "b/trace.jsonl", "i", "x~given-by-one"]]}
    cp = tmp_path / "cp.json"
    cp.write_bytes(checkpoint_bytes(tmp_path / "one", {}, journal))
    assert read_checkpoint(cp, tmp_path / "one").journals == journal
    assert read_checkpoint(cp, tmp_path / "two").journals == {}
