"""Who a trace is: run identity and the files that sit beside a trace.

Replay and watch use these same rules, so a run gets the same identity, and so the
same record, whichever way it is scored (docs/metrics.md §5, "Identity").
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from streameval import sane
from streameval.fileio import PATCH, SideFileError, read_limited
from streameval.model import RunIdentity
from streameval.traces.labels import labels_of
from streameval.traces.names import trace_suffixes

log = logging.getLogger(__name__)

META_NAME = "meta.json"
PATCH_NAMES = ("patch.diff", "model.patch")
#: files that live beside traces and are never traces themselves
SIDE_FILES = frozenset({META_NAME, *PATCH_NAMES, "ABORT"})


def walk_files(root: Path) -> Iterator[Path]:
    """Files under ``root`` that may be traces, in sorted order: hidden directories
    and the side files above are skipped. Replay, backtest and watch each pick
    their traces from this one walk, so they agree on where to look."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name not in SIDE_FILES:
                yield Path(dirpath) / name


class MetaError(ValueError):
    """``meta.json`` exists but cannot be used; the message says why."""


def read_meta(trace: Path) -> dict | None:
    """The ``meta.json`` beside ``trace`` as a dict, None when absent.

    Raises MetaError when it exists but is malformed, so callers can count it and
    fall back to the next rule instead of silently inventing an identity.
    """
    meta_path = trace.parent / META_NAME
    try:
        raw = read_limited(meta_path)
    except SideFileError as exc:
        raise MetaError(str(exc)) from exc
    except OSError as exc:
        raise MetaError(f"{meta_path}: cannot read ({exc})") from exc
    if raw is None:
        return None
    try:
        meta = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MetaError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise MetaError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")
    return meta


def _str_or(value: object, default: str) -> str:
    return str(value) if isinstance(value, (str, int)) and str(value) else default


#: longer run ids keep their end (the file and its directory) and a hash of the whole
MAX_RUN_ID = 120


def trace_name(trace: Path, root: Path | None = None) -> str:
    """The trace's path relative to ``root`` (the watched or replayed directory); with
    no root, or outside it, its directory and file name."""
    trace = Path(trace)
    if root is not None:
        rel = os.path.relpath(os.path.abspath(trace), os.path.abspath(root))
        if rel != os.curdir and not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
            return Path(rel).as_posix()
    return f"{trace.parent.name}/{trace.name}" if trace.parent.name else trace.name


def run_id_from_path(rel: str) -> str:
    """A readable run id from a trace's relative path: without the trace suffix, and
    when long, its last part behind a hash of the whole (two paths never share one)."""
    stem = rel
    for suffix in trace_suffixes():
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    if len(stem) <= MAX_RUN_ID:
        return stem
    digest = hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{digest}…{stem[-(MAX_RUN_ID - 9):]}"


def identify(trace: Path, instance: str | None = None,
             problems: list[str] | None = None, root: Path | None = None,
             named: Path | None = None) -> RunIdentity:
    """The identity of the run whose trace is ``trace``, found under ``root``.

    Instance: ``meta.json``, else ``--instance``, else the directory name (the trace's
    own instance may replace that: ``tracefile.run_identity``). Run id: ``meta.json``,
    else (``run_identity``) the trace's session id, else the path below ``root``.
    ``problems`` (when given) collects human-readable notes such as a malformed
    meta.json, which callers count and log; identification itself never fails.
    ``named``: the path the run was first seen at (a trace moved since keeps the name
    and run id it was given); meta.json is read beside ``trace``, where it is now.
    """
    trace = Path(trace)
    name_path = Path(named) if named is not None else trace
    try:
        meta = read_meta(trace) or {}
    except MetaError as exc:
        if problems is not None:
            problems.append(str(exc))
        log.warning("%s; falling back to --instance or the directory name", exc)
        meta = {}
    dir_name = name_path.parent.name or name_path.stem
    rel = trace_name(name_path, root)
    given = _str_or(meta.get("run_id"), "")
    pid = sane.pid(meta.get("pid"))
    noted_at = None
    if pid is not None:
        try:
            noted_at = (trace.parent / META_NAME).stat().st_mtime
        except OSError:
            pid = None   # gone since: nothing to vouch for the pid
    return RunIdentity(
        instance_id=_str_or(meta.get("instance_id"), instance or dir_name),
        run_id=given or run_id_from_path(rel),
        agent=_str_or(meta.get("agent"), "unknown"),
        model=_str_or(meta.get("model"), "unknown"),
        pid=pid,
        pid_noted_at=noted_at,
        trace=rel,
        run_id_given=bool(given),
        fidelity=meta.get("fidelity") if meta.get("fidelity") in ("full", "inputs") else None,
        experiment=_str_or(meta.get("experiment"), "") or None,
        run_labels=dict(sorted(labels_of(meta.get("labels")).items())),
        resolved=meta.get("resolved") if isinstance(meta.get("resolved"), bool) else None,
    )


#: what a run asks for: (the run id it asks for, its trace, its instance)
Claim = tuple[str, str, str]


def suffixed(run_id: str, trace: str | None, instance_id: str, taken=frozenset()) -> str:
    """``run_id`` told apart by the run's own name: ``~`` and 6 hex of the hash of its
    trace path (relative to the watched or replayed directory), so the same run is given
    the same id by every watcher, restarted or not, and by replay. Should that be
    ``taken`` already (two paths whose hashes share their start), more of the hash."""
    name = trace or f"\0{instance_id}"
    digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()
    for n in (6, 10, 40):
        got = f"{run_id}~{digest[:n]}"
        if got not in taken:
            return got
    # one trace asking one id for two instances (a run per line): the instance too
    both = hashlib.sha1(f"{name}\0{instance_id}".encode("utf-8", "surrogateescape"))
    return f"{run_id}~{both.hexdigest()}"


class RunIds:
    """Run ids handed out so far: two runs never share one (their label sets would
    collide in Prometheus, and the page and the abort journal name a run by it).

    The first run to ask for an id gets it; another run asking for the same id gets it
    ``suffixed`` by its trace path, the same at every ask. Who asked first is the one
    thing that depends on order (replay asks in path order, a live watcher as runs
    start), so it is kept: ``claims()`` lists every id given to a run still held, and
    ``restore`` hands them back to a restarted watcher before it reads any trace again,
    so no run changes id across a restart (``live/claims.py`` keeps them). ``on_claim``
    is told of every new claim, before the id is used anywhere."""

    def __init__(self) -> None:
        #: run id -> (trace, instance); (trace, None): kept for that trace (``reserve``)
        self._owner: dict[str, tuple[str, str | None]] = {}
        self._given: dict[Claim, str] = {}
        self._asked: dict[str, Claim] = {}   # id given -> what asked for it
        self._restored: set[Claim] = set()   # given back by ``restore``, not asked again yet
        #: told (claim, id given) of each new claim
        self.on_claim: Callable[[Claim, str], None] | None = None

    def claim(self, run_id: str, trace: str | None, instance_id: str) -> str:
        key = (run_id, trace or "", instance_id)
        got = self._given.get(key)
        if got is not None:
            self._restored.discard(key)
            return got
        got = run_id
        owner = self._owner.setdefault(run_id, key[1:])
        if owner[1] is None and owner[0] == key[1]:   # kept for this trace (``reserve``)
            owner = self._owner[run_id] = key[1:]
        if owner != key[1:]:
            got = suffixed(run_id, trace, instance_id, self._owner)
            self._owner[got] = key[1:]
        self._given[key] = got
        self._asked[got] = key
        if self.on_claim is not None:
            self.on_claim(key, got)
        return got

    def reserve(self, run_id: str, trace: str) -> None:
        """Keep ``run_id`` bare for the first run of ``trace`` to ask for it, whoever asks
        first: several workers read their traces at once, in no order of the walk, and
        the id must go where one watcher reading them in walk order gives it
        (``live.arbiter``). Until ``drop_reservations``."""
        self._owner.setdefault(run_id, (trace, None))

    def drop_reservations(self) -> None:
        """Ids kept for a trace that never asked: free again."""
        for run_id in [r for r, owner in self._owner.items() if owner[1] is None]:
            del self._owner[run_id]

    def release(self, run_id: str) -> None:
        """The run that was given ``run_id`` left memory: the id is free again (a run
        passing through leaves no entry; read again later, it asks anew)."""
        key = self._asked.pop(run_id, None)
        if key is None:
            return
        self._given.pop(key, None)
        self._restored.discard(key)
        for rid in (key[0], run_id):
            if self._owner.get(rid) == key[1:]:
                del self._owner[rid]

    def claims(self) -> list[tuple[Claim, str]]:
        """Every claim held: (what was asked, the id given)."""
        return list(self._given.items())

    def given(self, key: Claim) -> str | None:
        """The id ``key`` was given, if it holds one."""
        return self._given.get(key)

    def asker(self, run_id: str) -> Claim | None:
        """What asked for the id ``run_id``, if it is held."""
        return self._asked.get(run_id)

    def restore(self, key: Claim, got: str) -> None:
        """Give ``got`` back to ``key`` (a claim a previous watcher made), before anything
        asks: ``key`` asking again gets it. A later entry for the same key or id (a run
        that left memory and came back, an id freed and taken again) wins."""
        old = self._given.get(key)
        if old is not None:
            self.release(old)
        if got in self._asked:
            self.release(got)
        self._owner[got] = key[1:]
        self._given[key] = got
        self._asked[got] = key
        self._restored.add(key)

    def drop_restored(self) -> int:
        """Claims restored that no run asked for again (its trace gone, renamed by its
        meta.json since): released. Returns how many."""
        stale = [self._given[k] for k in self._restored if k in self._given]
        for got in stale:
            self.release(got)
        self._restored.clear()
        return len(stale)

    def __len__(self) -> int:
        return len(self._given)


def instance_candidates(trace: Path) -> list[str]:
    """SWE-bench-style ids (``owner__repo-N``) a trace's file name may carry.

    Collections of traces are often named ``<agent>__<model>__<instance>.traj.json``;
    when nothing else names the instance, these are tried against the gold, in order.
    """
    name = Path(trace).name
    parts = name.split("__")
    out: list[str] = []
    for i in range(len(parts) - 1):
        tail = parts[i + 1].split(".", 1)[0]  # drop .traj.json, .checkpoints.jsonl...
        if parts[i] and tail:
            out.append(f"{parts[i]}__{tail}")
    return out


#: side files said to be unusable (each once: a watcher looks beside a finished run's
#: trace at every rescan and file event), the oldest forgotten past ``SAID_MAX``
_SAID: dict[str, None] = {}
SAID_MAX = 10_000


def patch_beside(trace: Path) -> str | None:
    """The model patch stored beside a trace (``patch.diff`` or ``model.patch``)."""
    for name in PATCH_NAMES:
        p = Path(trace).parent / name
        try:
            data = read_limited(p, PATCH)
        except OSError as exc:
            # unreadable, a FIFO, a symlink, too big: a side file must never stop the
            # stream; the next name, or the trace's own patch, may do
            _say_once(p, exc)
            continue
        if data is not None:
            return data.decode("utf-8", errors="replace")
    return None


def _say_once(path: Path, exc: OSError) -> None:
    """A side file that cannot be used, said once (whatever the reason, which may change
    with every byte of a file over the limit): 102ce86 said it at every look, and whoever
    writes beside a trace could fill the log by touching a link there (a line per file
    event)."""
    key = str(path)
    if key in _SAID:
        return
    if len(_SAID) >= SAID_MAX:
        _SAID.pop(next(iter(_SAID)))
    _SAID[key] = None
    log.warning("%s: cannot read the patch (%s); ignored", path, exc)
