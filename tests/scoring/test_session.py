"""The session engine: one RunSnapshot that every reader reads, records made from it, and
the two meanings of "gold line" kept apart (docs/metrics.md §3 and §7)."""

from __future__ import annotations

from claude_run import APP, UTIL, Claude, append

from streameval.runs.evaluate import evaluate_trace, make_session, run_identity
from streameval.runs.reader import TraceReader
from streameval.scoring.snapshot import TOKEN_KINDS, token_counts
from streameval.traces.files import iter_lines, open_adapter
from streameval.traces.identity import identify


def _sessions(trace, res, instance="demo__demo-1"):
    name, adapter = open_adapter(trace)
    base = identify(trace, instance)
    reader = TraceReader(adapter, lambda inst, sid: make_session(
        res, run_identity(base, inst, len(reader.sessions), res, trace=trace, session_id=sid),
        name))
    for line, n in iter_lines(trace):
        reader.feed_line(line, n)
    return reader.close()


def test_a_step_showing_only_add_ctx_is_a_first_gold_read_but_no_line_coverage(env, tmp_path):
    """The demo gold: init_ctx is src/app.py 4-9, add_ctx src/util.py 1-5. Reading only
    util.py 1-5 finds gold (first_gold_line_step 1: any line of the whole context) and
    covers no line of the line granularity's gold (init_ctx only)."""
    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/util.py", UTIL, 1, 5))
    (rec,) = evaluate_trace(trace, res, instance="demo__demo-1")
    assert rec["first_gold_line_step"] == 1 and rec["first_gold_file_step"] == 1
    assert rec["final"]["line"]["coverage"] == 0.0
    assert rec["final"]["line"]["gold_size"] == 6                  # app.py 4-9: init_ctx
    assert rec["final"]["span"]["intersection"] > 0               # span gold: init + add
    gold = res.lookup("demo__demo-1")
    assert [g.file for g in gold.line_gold] == ["src/app.py"]
    assert {g.file for g in gold.gold_context} == {"src/app.py", "src/util.py"}


def test_the_record_is_made_of_the_snapshot(env, tmp_path):
    """Whatever the exporter, abort policies, the page and inspect read (the snapshot)
    is what the record says: identity, counts, tokens, scores and EditLoc."""
    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 2, 3))
    (session,) = _sessions(trace, res)
    snap, rec = session.snapshot(), session.record()
    assert rec["run_id"] == snap.run_id and rec["instance_id"] == snap.instance_id
    assert rec["num_steps"] == snap.num_steps == 2
    assert rec["tool_calls"] == snap.tool_calls == 2
    assert rec["tokens"] == token_counts(snap.tokens) and list(rec["tokens"]) == list(TOKEN_KINDS)
    for g, numbers in snap.scores.granularities.items():
        assert rec["final"][g]["coverage"] == numbers.coverage
        assert rec["final"][g]["precision"] == numbers.precision
        assert rec["trajectory"]["auc_coverage"][g] == numbers.auc_coverage
    assert snap.error is None and snap.has_repo and snap.last_call.tool == "Read"


def test_a_run_without_gold_is_a_run_in_the_snapshot_and_the_record(env, tmp_path):
    """docs/metrics.md §5b: no gold row names the instance. The run is no error: its
    gold-free signals are scored, its gold metrics are null, and it says why."""
    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 3), c.result())
    (rec,) = evaluate_trace(trace, res, instance="no__such-1")
    (session,) = _sessions(trace, res, "no__such-1")
    assert "error" not in rec and rec["gold_missing"].startswith("no_gold: no gold row")
    assert rec["final"] is None and rec["trajectory"] is None and rec["localisation"] is None
    assert rec["problems"] == {"no_gold": 1} and rec["repo"] == "no/such"
    assert rec["num_steps"] == 1 and rec["signals"]["files_read"] == 1
    snap = session.snapshot()
    assert snap.scores is None and snap.error is None and snap.gold_missing == rec["gold_missing"]
    assert snap.tool_calls == 1 and snap.signals.tool_calls == 1



def _walked(obj) -> int:
    """Objects a full garbage collection walks for ``obj``'s own state (not the shared
    gold, view and symbols)."""
    import gc
    from types import ModuleType

    state = vars(obj).get("state")
    shared = {id(obj.gold), id(obj.view), id(vars(obj).get("_symbols")),
              id(getattr(state, "symbols", None)), id(None)}
    seen, todo = set(), [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen or id(o) in shared or not gc.is_tracked(o) or isinstance(o, (type, ModuleType)):
            continue
        seen.add(id(o))
        todo.extend(gc.get_referents(o))
    return len(seen)


def test_a_released_session_settles_into_bytes_and_wakes_the_same(env, tmp_path):
    """A finished run's session kept whole held some fifty objects a full garbage
    collection walks (issue 27); settled, a handful, and every reader gets what it got."""
    from claude_run import PATCH

    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 2, 3),
           c.result())
    (session,) = _sessions(trace, res)
    (twin,) = _sessions(trace, res)
    session.settle()                       # not released: a no-op
    assert "_dormant" not in vars(session)
    awake = _walked(session)
    session.release_reading()
    record, snap = session.record(), session.snapshot()
    session.settle()
    assert "_dormant" in vars(session)
    assert _walked(session) <= 8 < awake
    assert session.identity == twin.identity and session.version == twin.version
    assert session.record() == record      # woken by what it reads
    assert session.snapshot() == snap
    session.settle()
    assert session.set_patch(PATCH, "file") and twin.set_patch(PATCH, "file")
    assert session.record() == twin.record() and "editloc" in session.record()


def _released_session(env):
    """The session of a finished one-read run, released (its record written)."""
    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    (session,) = _sessions(trace, res)
    session.release_reading()
    return session


def test_a_session_something_was_put_on_stays_awake(env, tmp_path):
    session = _released_session(env)
    session.observer = lambda: None        # not plain data: it cannot be kept as bytes
    session.settle()
    assert "_dormant" not in vars(session) and session.record()["num_steps"] == 1


def test_what_is_set_on_a_settled_session_survives_its_waking(env, tmp_path):
    """102ce86 woke a settled session with the kept attributes laid over the ones it
    held: a value set while it slept (not read first, so it did not wake it) was
    silently replaced by the one from before."""
    session = _released_session(env)
    session.settle()
    session._final_editloc = ("patch", {"set": "while settled"})
    assert session.extras is not None     # wakes it
    assert session._final_editloc == ("patch", {"set": "while settled"})
