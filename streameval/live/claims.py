"""The run ids a watcher handed out, kept across a restart.

Which of two runs asking for one id gets it bare is decided by who asks first
(``traces.identity.RunIds``). A restarted watcher reads its traces again in another
order, so it must be told who asked first, or a run would change id across the restart
(its series, its page and its abort journal all name it by that id). Two places keep
the claims, and a restart reads both before it reads any trace:

- the checkpoint holds every claim of the runs in memory when it was saved (the
  watcher's ``run_ids`` journal);
- a claim made since is appended to ``<checkpoint>.claims`` as it is made, before its id
  is used anywhere (one short line, no fsync: it survives the process, a power cut may
  lose the last seconds), and that file starts afresh at every checkpoint save.

Claims of runs that left memory go with them, as everything of those runs does
(docs/operate.md, "Bounded growth"): read again later, such a run asks anew.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from streameval.fileio import read_limited, write_atomic
from streameval.traces.identity import Claim, RunIds

log = logging.getLogger(__name__)

#: claims made between two checkpoint saves: far below this
CLAIMS_LIMIT = 64 << 20


def claims_path(checkpoint: Path) -> Path:
    """Where the claims made since the checkpoint was saved go."""
    return Path(f"{checkpoint}.claims")


def _entry(item: Any) -> tuple[Claim, str] | None:
    """``[asked, trace, instance, given]`` as a claim; None unless four strings (the
    files may be edited)."""
    if isinstance(item, list) and len(item) == 4 and all(isinstance(x, str) for x in item):
        return (item[0], item[1], item[2]), item[3]
    return None


class ClaimLog:
    """Keeps the claims of ``ids`` for a watcher whose checkpoint is ``checkpoint``
    (None: no checkpoint, nothing kept) and whose root is ``root``."""

    def __init__(self, ids: RunIds, checkpoint: Path | None, root: Path,
                 errors: Counter | None = None):
        self.ids = ids
        self.path = claims_path(checkpoint) if checkpoint is not None else None
        self.root = str(root)
        self._fd: int | None = None
        #: the file holds nothing of ours (absent, another root's): it starts afresh
        self._foreign = True
        self._failing = False
        #: output -> failed writes (the watcher's ``streameval_output_errors_total``)
        self.errors = errors if errors is not None else Counter()
        if self.path is not None:
            ids.on_claim = self.note

    # ------------------------------------------------------------------ the checkpoint
    def journal(self) -> list[list[str]]:
        """Every claim held, for the checkpoint: ``[asked, trace, instance, given]``."""
        return [[*key, got] for key, got in self.ids.claims()]

    def restore_journal(self, entries: Any) -> None:
        """The claims a checkpoint held, given back (entries that are not four strings
        are skipped)."""
        if not isinstance(entries, list):
            log.warning("checkpoint run id journal is not a list; ignored")
            return
        for item in entries:
            entry = _entry(item)
            if entry is not None:
                self.ids.restore(*entry)

    # ------------------------------------------------------------------ since the checkpoint
    def read_since(self) -> int:
        """The claims appended since the last checkpoint save, given back in the order they
        were made; returns how many. A file written for another root is ignored."""
        if self.path is None:
            return 0
        try:
            raw = read_limited(self.path, CLAIMS_LIMIT)
        except OSError as exc:
            log.warning("%s unusable (%s); the run ids given since the last checkpoint "
                        "are asked for anew", self.path, exc)
            return 0
        if not raw:
            return 0
        lines = raw.split(b"\n")[:-1]   # a torn last line (a crash mid-append) has no newline
        n = 0
        for i, line in enumerate(lines):
            try:
                item = orjson.loads(line)
            except orjson.JSONDecodeError:
                item = None   # a torn line: skipped (the first: no header, so no claims)
            if i == 0:
                if not isinstance(item, dict) or item.get("root") != self.root:
                    log.warning("%s was written for another root; ignored", self.path)
                    return 0
                self._foreign = False
                continue
            entry = _entry(item)
            if entry is not None:
                self.ids.restore(*entry)
                n += 1
        return n

    def note(self, key: Claim, got: str) -> None:
        """A new claim: appended at once, before its id is exported, logged or written."""
        if self.path is None:
            return
        line = orjson.dumps([*key, got]) + b"\n"
        try:
            if self._fd is None:
                self._open(truncate=self._foreign)
            os.write(self._fd, line)
        except OSError as exc:
            self.errors["claims"] += 1
            if not self._failing:
                log.error("cannot append a run id to %s (%s); a restart before the next "
                          "checkpoint save may give that run another id", self.path, exc)
            self._failing = True
            return
        self._failing = False

    def saved(self) -> None:
        """The checkpoint was saved with every claim held: the file starts afresh."""
        if self.path is None:
            return
        try:
            self._open(truncate=True)
        except OSError as exc:
            log.error("cannot start %s afresh (%s); kept", self.path, exc)

    def compact(self) -> None:
        """The file written afresh with every claim held, for a keeper of claims that
        has no checkpoint of its own to hold them (the supervisor of several workers,
        ``live.arbiter``): the claims of runs that left memory go. A watcher of one
        worker started later reads it as it reads its own (``read_since``)."""
        if self.path is None:
            return
        data = b"".join([orjson.dumps({"root": self.root}) + b"\n",
                         *(orjson.dumps(entry) + b"\n" for entry in self.journal())])
        self.close()
        try:
            write_atomic(self.path, data)
        except OSError as exc:
            self.errors["claims"] += 1
            log.error("cannot write %s afresh (%s); appended to as it was", self.path, exc)
            return
        self._foreign = False

    def _open(self, truncate: bool) -> None:
        self.close()
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) \
            | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.path, flags | (os.O_TRUNC if truncate else 0), 0o644)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                os.write(fd, orjson.dumps({"root": self.root}) + b"\n")
            elif os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")   # after a torn line, not glued to it
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        self._foreign = False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
