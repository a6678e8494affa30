"""Where pushed runs become trace files: ``<spool>/<source>/<run id>/trace.jsonl`` with
a ``meta.json`` beside it, inside the watched directory, so the watcher follows them
as it follows any trace and their records equal ``replay`` of the same files.

Names come from requests, so they are checked (``[A-Za-z0-9._-]``, at most 128
characters, not ``.``/``..``), files are opened without following symlinks, and the
runs per source are bounded.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from streameval.fileio import append_whole, write_atomic
from streameval.traces.names import TRACE_NAME

_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
SOURCES = ("lines", "claude-hooks", "claude-otel", "codex-otel")


class SpoolError(ValueError):
    """A request names a run the spool cannot take; ``status`` is the HTTP answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def valid_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and name not in (".", "..")


class Spool:
    """Appends pushed lines to per-run trace files (thread-safe)."""

    def __init__(self, directory: Path, max_runs_per_source: int = 1000):
        self.directory = Path(directory)
        self.max_runs = max_runs_per_source
        self._lock = threading.Lock()
        self._known: dict[str, set[str]] = {}

    def trace_path(self, source: str, run_id: str) -> Path:
        return self.directory / source / run_id / TRACE_NAME

    def append(self, source: str, run_id: str, lines: list[bytes], meta: dict) -> Path:
        """Append whole lines to the run's trace, creating it (and its meta.json, written
        once, by us) when new. Raises SpoolError (400 bad name, 429 too many runs)."""
        if source not in SOURCES:
            raise SpoolError(f"unknown source {source!r}")
        if not valid_name(run_id):
            raise SpoolError(f"run id {run_id[:80]!r} must be 1-128 characters of "
                             "letters, digits, '.', '_' or '-'")
        path = self.trace_path(source, run_id)
        with self._lock:
            known = self._known.setdefault(source, self._existing(source))
            if run_id not in known:
                if len(known) >= self.max_runs:
                    raise SpoolError(f"source {source} already has {len(known)} runs "
                                     f"(--ingest-max-runs {self.max_runs})", 429)
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.parent.is_symlink():
                    raise SpoolError(f"{path.parent} is a symlink; refused", 409)
                write_atomic(path.parent / "meta.json",
                             json.dumps({"run_id": run_id, **meta}).encode())
                known.add(run_id)
            if lines:
                data = b"".join(line.rstrip(b"\r\n") + b"\n" for line in lines
                                if line.strip())
                if data:
                    _no_symlink(path)
                    append_whole(path, data)
        return path

    def _existing(self, source: str) -> set[str]:
        try:
            return {p.name for p in (self.directory / source).iterdir() if p.is_dir()}
        except OSError:
            return set()


def _no_symlink(path: Path) -> None:
    if os.path.islink(path):
        raise SpoolError(f"{path} is a symlink; refused", 409)
