"""Trace file names and format facts are the adapters' (``traces/names.py``, issue 15).

``watch``'s default globs, the endings a run id leaves out, the extensions replay takes
from a directory, "every line is a run" and "states its context" were kept as lists of
names and format-name comparisons in four places; now they are adapter attributes and
everything else derives from them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streameval.live.paths import DEFAULT_GLOBS, is_trace
from streameval.runs.batch import TRACE_SUFFIXES
from streameval.traces import names
from streameval.traces.formats import FORMATS, adapter_class, states_context
from streameval.traces.formats.base import Adapter
from streameval.traces.identity import run_id_from_path

PKG = Path(__file__).resolve().parents[2] / "streameval"

#: what ``watch`` followed by default before the names moved into the adapters
FOLLOWED_BEFORE = ("trace.jsonl", "*.traj.json", "*.traj", "*.checkpoints.jsonl",
                   "output.jsonl", "rollout-*.jsonl", "events.jsonl", "trajectory.json")


def test_watch_follows_at_least_what_it_followed() -> None:
    assert set(FOLLOWED_BEFORE) <= set(DEFAULT_GLOBS)
    for name in ("trace.jsonl", "x.traj.json", "x.traj", "x.checkpoints.jsonl", "output.jsonl",
                 "rollout-2025-01-01T00-00-00-abc.jsonl", "events.jsonl", "trajectory.json"):
        assert is_trace(Path("/runs/r1") / name), name
    for name in ("predictions.jsonl", "notes.json", "meta.json", "x.traj.tmp"):
        assert not is_trace(Path("/runs/r1") / name), name


def test_every_list_of_names_derives_from_the_adapters() -> None:
    declared = [p for fmt in FORMATS for p in adapter_class(fmt).patterns]
    assert set(DEFAULT_GLOBS) == {names.TRACE_NAME, *declared}
    assert DEFAULT_GLOBS == names.trace_patterns()
    assert TRACE_SUFFIXES == names.trace_extensions() == (".jsonl", ".json", ".traj")
    assert names.trace_suffixes() == (".checkpoints.jsonl", ".traj.json", ".jsonl", ".json",
                                      ".traj")


@pytest.mark.parametrize("pattern", sorted(set(FOLLOWED_BEFORE)))
def test_a_run_id_leaves_out_the_ending_of_every_pattern(pattern: str) -> None:
    name = pattern.replace("*", "run-7")
    stem = run_id_from_path(f"dir/{name}")
    assert f"dir/{name}".startswith(stem) and not stem.endswith((".json", ".jsonl", ".traj"))
    assert run_id_from_path("dir/x.traj.json") == "dir/x"
    assert run_id_from_path("dir/x.checkpoints.jsonl") == "dir/x"


def test_a_format_added_with_its_patterns_is_watched_and_named(monkeypatch) -> None:
    """The derivation reads the adapters, not a list of its own."""

    class NewAdapter(Adapter):
        format = "new"
        patterns = ("*.newtrace.ndjson",)

    monkeypatch.setattr(names, "FORMATS", (*FORMATS, "new"))
    monkeypatch.setattr(names, "adapter_class",
                        lambda f: NewAdapter if f == "new" else adapter_class(f))
    patterns = names.trace_patterns.__wrapped__()
    assert patterns[-1] == "*.newtrace.ndjson"
    assert ".newtrace.ndjson" in {names._ending(p) for p in patterns}


def test_run_per_line_and_stated_context_are_adapter_attributes() -> None:
    assert [f for f in FORMATS if adapter_class(f).run_per_line] == ["openhands"]
    assert [f for f in FORMATS if adapter_class(f).states_context] == ["unified"]
    assert states_context("unified") and not states_context("claude")
    assert not states_context("") and not states_context(None)


def _code_files() -> list[Path]:
    return [p for p in PKG.rglob("*.py") if "examples" not in p.parts]


def test_no_format_name_is_compared_outside_the_adapters() -> None:
    """``fmt == "unified"``-style branches ask the adapter's attribute instead. The one
    left, ``runs/batch.py``, picks the unified reader that splits a file into records."""
    compare = re.compile(r"""fmt\s*(?:==|!=|in)\s*(?:\(|\{|frozenset)?\s*["']""")
    found = {str(p.relative_to(PKG)) for p in _code_files() if compare.search(p.read_text())}
    assert found <= {"runs/batch.py"}, found


def test_no_module_keeps_its_own_list_of_trace_names() -> None:
    """Each pattern is written once: in its adapter (``trace.jsonl`` in ``traces/names``)."""
    for pattern in names.trace_patterns():
        literal = re.compile(rf"""["']{re.escape(pattern)}["']""")
        where = [p for p in _code_files() if literal.search(p.read_text())]
        assert len(where) == 1, (pattern, where)
        assert where[0].parent.name == "formats" or where[0].name == "names.py", where
