"""A trace file's runs: who each one is, its session with gold and repository looked up,
and a whole recorded file scored.

``streameval replay``, ``inspect`` and the watcher all make their sessions here, which is
why a watched trace's final record is byte-for-byte the replayed one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from streameval.errors import Reason, RepoError, StreamevalError
from streameval.model import RunIdentity
from streameval.runs.reader import TraceReader
from streameval.runs.resources import Resources
from streameval.scoring.record import Record, error_record
from streameval.scoring.session import RunSession
from streameval.traces.files import iter_marked_lines, open_adapter
from streameval.traces.formats import states_context
from streameval.traces.identity import identify, instance_candidates, patch_beside


def run_identity(base: RunIdentity, trace_instance: str | None, index: int,
                 res: Resources, explicit: bool = False,
                 trace: Path | None = None, session_id: str | None = None) -> RunIdentity:
    """The identity of the ``index``-th run found in one trace file.

    The file's own identity (meta.json, ``--instance``, directory name) names its first
    run, except when that names no gold row, was not given explicitly, and the trace
    says which instance it ran (or, failing that, the file name carries a gold id).
    The first run's id is the trace's session id (Claude Code, Codex) unless meta.json
    names it. Later runs of the same file (OpenHands holds one instance per line) are
    the trace's own instances, their run ids suffixed. The command's label rules
    (``--label``, ``--label-from-path``) are laid over meta.json's, then ``--outcomes``
    gives the run's verdict (and labels for keys it has none of).
    """
    ident = res.labels.apply(_run_identity(base, trace_instance, index, res, explicit, trace,
                                           session_id), trace)
    return res.outcomes.apply(ident) if res.outcomes is not None else ident


def _run_identity(base: RunIdentity, trace_instance: str | None, index: int,
                  res: Resources, explicit: bool, trace: Path | None,
                  session_id: str | None) -> RunIdentity:
    if index == 0 and session_id and not base.run_id_given:
        base = replace(base, run_id=session_id)
    if not trace_instance:
        if explicit or index > 0 or trace is None or res.lookup(base.instance_id) is not None:
            return base
        # last resort: an id in the file name (``<agent>__<owner>__<repo>-<n>.traj``)
        named = next((c for c in instance_candidates(trace) if res.lookup(c) is not None), None)
        return replace(base, instance_id=named) if named else base
    if index > 0:
        return replace(base, instance_id=trace_instance,
                       run_id=f"{base.run_id}/{trace_instance}")
    if not explicit and res.lookup(base.instance_id) is None:
        return replace(base, instance_id=trace_instance)
    return base


def make_session(res: Resources, identity: RunIdentity, fmt: str, **kw) -> RunSession:
    """A session with its gold and repo looked up. A trace no gold row names, or whose
    repository is missing, is still a run: its session scores the gold-free signals
    (``gold_missing``, docs/metrics.md §5b). Other failures (a damaged gold row, a wrong
    commit, gold not in the repository) and a prediction without gold or repository
    (it is nothing but what it states) become an error record."""
    kw.setdefault("tools", res.tools)
    kw.setdefault("states_context", states_context(fmt))
    gold = res.lookup(identity.instance_id)
    if gold is None:
        bad = res.gold.error_for(identity.instance_id) if res.gold is not None else None
        if bad:
            return RunSession(identity, fmt=fmt, error=f"{Reason.BAD_GOLD.value}: {bad}", **kw)
        if not kw["states_context"]:
            return RunSession(identity, fmt=fmt, gold_missing=_no_gold(res, identity), **kw)
        return RunSession(identity, fmt=fmt, error=(
            f"{Reason.MISSING_GOLD.value}: no gold row for instance "
            f"{identity.instance_id!r}; check the instance id or pass the right --gold"), **kw)
    try:
        view = res.repos.view_for(gold)
        res.repos.check_gold(gold, view)
    except (RepoError, StreamevalError) as exc:
        if exc.reason is Reason.MISSING_REPO and not kw["states_context"]:
            return RunSession(identity, fmt=fmt, repo=gold.repo,
                              gold_missing=f"{Reason.NO_REPO.value}: {exc}", **kw)
        return RunSession(identity, gold, fmt=fmt, error=f"{exc.reason.value}: {exc}", **kw)
    return RunSession(identity, gold, view, res.symbols, fmt=fmt, texts=res.texts, **kw)


def _no_gold(res: Resources, identity: RunIdentity) -> str:
    """Why a trace's run has no gold, and what would give it some."""
    if res.gold is None:
        return f"{Reason.NO_GOLD.value}: no --gold or --gold-from-patch given"
    return (f"{Reason.NO_GOLD.value}: no gold row for instance {identity.instance_id!r}; "
            "give the trace a meta.json with instance_id, or pass --instance, or check --gold")


def evaluate_trace(path: str | Path, res: Resources, *, fmt: str | None = None,
                   instance: str | None = None, patch: str | None = None,
                   root: Path | None = None,
                   on_session: Callable[[RunSession], None] | None = None) -> list[Record]:
    """Score one recorded trace file; one record per run it holds. ``root`` is the
    directory the trace was found under (its records name the trace relative to it).
    ``on_session`` is given each session before its first event (``streameval view``
    attaches the page's journal there).

    The patch comes, in order, from ``patch`` (e.g. a predictions file), a
    ``patch.diff``/``model.patch`` beside the trace, or the trace's own final event.
    """
    path = Path(path)
    identity = identify(path, instance, root=root)
    try:
        name, adapter = open_adapter(path, fmt)
    except StreamevalError as exc:
        return [error_record(identity, f"{exc.reason.value}: {exc}")]
    side_patch = patch if patch is not None else patch_beside(path)

    def factory(trace_instance: str | None, session_id: str | None) -> RunSession:
        ident = run_identity(identity, trace_instance, len(reader.sessions), res,
                             explicit=instance is not None, trace=path, session_id=session_id)
        session = make_session(res, ident, name)
        if on_session is not None:
            on_session(session)
        return session

    reader = TraceReader(adapter, factory)
    for line, lineno, cut in iter_marked_lines(path):
        reader.feed_line(line, lineno, unterminated=cut)
    sessions = reader.close()
    land_file_patch(sessions, side_patch)
    return [s.record() for s in sessions]


def land_file_patch(sessions: list[RunSession], patch: str | None) -> None:
    """A patch stored beside a trace is its run's only when the file holds one run:
    never one of the many runs of an OpenHands ``output.jsonl``."""
    if patch and len(sessions) == 1:
        sessions[0].set_patch(patch, "file")
