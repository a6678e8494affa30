"""Who a trace is: run identity and the files that sit beside a trace.

Replay and watch use these same rules (issue: "`watch` uses the same rules"), so a run
gets the same identity, and so the same record, whichever way it is scored.
Order: a ``meta.json`` beside the trace, else ``--instance``, else the parent
directory's name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from .model import RunIdentity

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
        raw = meta_path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MetaError(f"{meta_path}: cannot read ({exc})") from exc
    try:
        meta = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MetaError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise MetaError(f"{meta_path}: expected a JSON object, got {type(meta).__name__}")
    return meta


def _str_or(value: object, default: str) -> str:
    return str(value) if isinstance(value, (str, int)) and str(value) else default


def identify(trace: Path, instance: str | None = None,
             problems: list[str] | None = None) -> RunIdentity:
    """The identity of the run whose trace is ``trace``.

    ``problems`` (when given) collects human-readable notes such as a malformed
    meta.json, which callers count and log; identification itself never fails.
    """
    trace = Path(trace)
    try:
        meta = read_meta(trace) or {}
    except MetaError as exc:
        if problems is not None:
            problems.append(str(exc))
        log.warning("%s; falling back to --instance or the directory name", exc)
        meta = {}
    dir_name = trace.parent.name or trace.stem
    instance_id = _str_or(meta.get("instance_id"), instance or dir_name)
    run_id = _str_or(meta.get("run_id"), dir_name if meta or not instance else instance)
    pid = meta.get("pid")
    return RunIdentity(
        instance_id=instance_id,
        run_id=run_id,
        agent=_str_or(meta.get("agent"), "unknown"),
        model=_str_or(meta.get("model"), "unknown"),
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
    )


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


def patch_beside(trace: Path) -> str | None:
    """The model patch stored beside a trace (``patch.diff`` or ``model.patch``)."""
    for name in PATCH_NAMES:
        p = Path(trace).parent / name
        try:
            return p.read_bytes().decode("utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            continue
        except OSError as exc:
            # unreadable (permissions, a symlink loop...): a side file must never
            # stop the stream; the next name, or the trace's own patch, may do
            log.warning("%s: cannot read the patch (%s); ignored", p, exc)
            continue
    return None
