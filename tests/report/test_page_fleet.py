"""The fleet between two answers: rows by generation, removals, a page of another
process answered in full, a run that came back not named removed."""

from __future__ import annotations

from streameval.report.page_fleet import FleetCache, build_all


def rows(cache: FleetCache, since=None):
    answer = cache.answer(since)
    return answer, sorted(r["id"] for r in answer["runs"])


def refresh(cache: FleetCache, runs: dict[str, int]) -> None:
    build_all(cache, ((k, v, lambda k=k, v=v: {"id": k, "v": v}) for k, v in runs.items()))


def test_only_what_moved_since_the_generation_a_page_holds():
    cache = FleetCache()
    refresh(cache, {"a": 1, "b": 1})
    first, ids = rows(cache)
    assert first["full"] and ids == ["a", "b"]
    refresh(cache, {"a": 1, "b": 1})
    assert cache.tag() == first["gen"]          # nothing moved: the same generation (304)
    refresh(cache, {"a": 2, "b": 1})
    delta, ids = rows(cache, first["gen"])
    assert not delta["full"] and ids == ["a"] and delta["removed"] == []
    refresh(cache, {"a": 2})
    gone, ids = rows(cache, delta["gen"])
    assert ids == [] and gone["removed"] == ["b"]
    # b comes back: a row, not a removal, for a page that saw it leave or not
    refresh(cache, {"a": 2, "b": 5})
    back, ids = rows(cache, first["gen"])
    assert ids == ["a", "b"] and back["removed"] == []


def test_another_process_or_a_future_generation_is_answered_in_full():
    cache = FleetCache()
    refresh(cache, {"a": 1})
    for since in (None, "", "nonsense", "beef.1", f"{cache.nonce}.99", f"{cache.nonce}.x"):
        assert cache.answer(since)["full"], since


def test_a_page_further_behind_than_the_removals_kept_is_answered_in_full():
    cache = FleetCache(keep_removed=2)
    refresh(cache, {"a": 1, "b": 1, "c": 1, "d": 1})
    old = cache.tag()
    for left in ({"b": 1, "c": 1, "d": 1}, {"c": 1, "d": 1}, {"d": 1}):
        refresh(cache, left)
    answer = cache.answer(old)
    assert answer["full"] and [r["id"] for r in answer["runs"]] == ["d"]


def test_a_key_whose_run_is_renamed_names_the_old_id_removed():
    cache = FleetCache()
    build_all(cache, [("k", 1, lambda: {"id": "old"})])
    tag = cache.tag()
    build_all(cache, [("k", 2, lambda: {"id": "new"})])
    answer = cache.answer(tag)
    assert [r["id"] for r in answer["runs"]] == ["new"] and answer["removed"] == ["old"]
    assert cache.key_of("new") == "k" and cache.key_of("old") is None
