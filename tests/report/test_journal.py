"""A finished run's journal kept as one bytes object (issue 27): the page reads the same
rows and trails back, a call after all wakes it, and forgetting the calls keeps the
trails."""

from __future__ import annotations

import gc
import json
from types import ModuleType, SimpleNamespace

from claude_run import APP, UTIL, Claude
from hypothesis import given
from hypothesis import strategies as st

from streameval.intervals import merge_ranges
from streameval.report.journal import RunJournal
from streameval.runs.evaluate import evaluate_trace


def _journal(env, journal: RunJournal | None = None, name: str = "r") -> RunJournal:
    """The journal of a run of two reads (``journal`` given: it hears them too)."""
    s, runs, res = env
    d = runs / name
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name}))
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 5), *c.read("src/util.py", UTIL, 2, 4)]
    (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    journal = journal if journal is not None else RunJournal()
    evaluate_trace(d / "trace.jsonl", res, root=runs,
                   on_session=lambda session: session.listeners.append(journal))
    return journal


def _tracked(journal: RunJournal) -> int:
    seen, todo = set(), [journal]
    while todo:
        o = todo.pop()
        if id(o) in seen or not gc.is_tracked(o) or isinstance(o, (type, ModuleType)):
            continue
        seen.add(id(o))
        todo.extend(gc.get_referents(o))
    return len(seen)


def test_a_settled_journal_is_one_object_and_reads_the_same(env):
    journal = _journal(env)
    calls, files = list(journal.calls), dict(journal.files)
    kept = _tracked(journal)
    journal.settle()
    assert _tracked(journal) <= 3 < kept            # the journal and its two empty holders
    assert journal.calls == calls and journal.files == files and journal.n == 2
    journal.forget_calls()
    assert journal.calls == [] and journal.calls_forgotten and journal.files == files


def test_a_call_after_all_wakes_the_journal(env):
    journal = _journal(env)
    journal.settle()
    rows = journal.calls
    _journal(env, journal, "again")                 # two more calls heard
    assert journal.n == 4 and journal.calls[:2] == rows and len(journal.calls) == 4


def _credited_one_by_one(steps: list[dict[str, list[tuple[int, int]]]]) -> dict:
    """The reference: every range of every step added on its own."""
    from streameval.intervals import IntervalSet

    trails: dict[str, tuple[IntervalSet, list]] = {}
    for n, spans in enumerate(steps, 1):
        for path, ranges in spans.items():
            credited, by_step = trails.setdefault(path, (IntervalSet(), []))
            for a, b in ranges:
                lo, hi = (a, b) if a <= b else (b, a)
                by_step += [(x, y, n) for x, y in credited.add(max(1, lo), hi)]
    return {p: (list(c), b) for p, (c, b) in trails.items()}


_range = st.tuples(st.integers(-3, 60), st.integers(-3, 60))
_spans = st.dictionaries(st.sampled_from(["a.py", "b.py"]), st.lists(_range, max_size=6),
                         max_size=2)


@given(st.lists(st.one_of(_spans, _spans.map(lambda d: {p: merge_ranges(r) for p, r in d.items()})),
                max_size=12))
def test_a_steps_ranges_credited_at_once_are_what_one_add_each_makes(steps):
    """A search step credits a range per hit; they are merged into the file's trail in
    one pass: the trail (lines, and the pieces by step the page shows) is the same."""
    journal = RunJournal()
    for n, spans in enumerate(steps, 1):
        journal._credit(SimpleNamespace(spans=spans), n)
    got = {p: (list(t.credited), t.by_step) for p, t in journal.files.items()}
    assert got == _credited_one_by_one(steps)
