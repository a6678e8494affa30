"""Token usage of a hook-connected Claude Code run, read from its own transcript.

Claude Code's hook payloads carry no usage, but they carry ``transcript_path``: the
session file Claude Code writes (``~/.claude/projects/<slug>/<session id>.jsonl``). When
the agent runs on the watcher's machine, that file is readable, and its assistant
messages' ``usage`` are the run's tokens.

The path comes from the payload, so from whoever can reach the ingest port: an agent
(or anything steering one) can name any file. It is read only when all of these hold:

- it is absolute and lies, after resolving every symlink, under one of the transcript
  roots (``~/.claude/projects`` of the watcher's user and ``$CLAUDE_CONFIG_DIR/projects``,
  or what ``STREAMEVAL_CLAUDE_TRANSCRIPTS`` lists): not ``/etc/shadow``, not
  ``/proc/self/environ`` (the ingest token), not another user's home;
- its name is ``<the payload's session id>.jsonl`` and it belongs to the watcher's user;
- the final component is not a symlink, it is a regular file (no FIFO that would block,
  no device that never ends), and it is at most ``TRANSCRIPT_LIMIT`` bytes
  (``fileio.read_limited``).

Only numbers leave it: the sums of the ``usage`` fields of the lines whose ``sessionId``
is the payload's, and the model they name. Nothing in it is executed or echoed.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

from streameval import config
from streameval.fileio import read_from

log = logging.getLogger(__name__)

#: a long session's transcript stays far below this
TRANSCRIPT_LIMIT = 64 << 20
_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
         "cache_creation_input_tokens")


def allowed(path_text: object, session_id: str, roots: list[Path]) -> Path | None:
    """The transcript path when the rules above let it be read, else None (logged)."""
    if not isinstance(path_text, str) or not path_text.startswith("/") or "\x00" in path_text:
        return None
    path = Path(path_text)
    if path.name != f"{session_id}.jsonl":
        log.warning("transcript_path %r is not %s.jsonl; not read", path_text[:200], session_id)
        return None
    real_parent = Path(os.path.realpath(path.parent))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real_parent == real_root or real_root in real_parent.parents:
            candidate = real_parent / path.name
            try:
                if os.lstat(candidate).st_uid != os.getuid():
                    return None
            except OSError:
                return None
            return candidate
    log.warning("transcript_path %r is outside the transcript roots (%s); not read",
                path_text[:200], ", ".join(map(str, roots)) or "none")
    return None


class UsageReader:
    """Each transcript read from where the last hook left it: a run's hooks (two per
    tool call) each ask for its totals, and reading the whole file every time would cost
    the square of its length. Bounded: the least recently asked files are forgotten
    (read again from their start when asked)."""

    def __init__(self, max_files: int = 1024):
        self.max_files = max_files
        self._files: OrderedDict[tuple[int, int], _Sums] = OrderedDict()

    def usage_of(self, path: Path, session_id: str) -> tuple[dict[str, int], str | None] | None:
        """The session's token sums and last model from its transcript, or None when it
        cannot be read as one (a symlink, a FIFO, too large, gone)."""
        try:
            st = os.stat(path)
        except OSError as exc:
            log.warning("transcript %s not read: %s", path, exc)
            return None
        key = (st.st_dev, st.st_ino)
        sums = self._files.pop(key, None)
        if sums is None or st.st_size < sums.offset or sums.session_id != session_id:
            sums = _Sums(session_id)   # new, rewritten, or asked for another session
        try:
            got = read_from(path, sums.offset, TRANSCRIPT_LIMIT)
        except OSError as exc:
            log.warning("transcript %s not read: %s", path, exc)
            return None
        if got is None:
            return None
        data, _st = got
        end = data.rfind(b"\n") + 1   # whole lines only: the last may be half-written
        sums.add(data[:end])
        sums.offset += end
        self._files[key] = sums
        while len(self._files) > self.max_files:
            self._files.popitem(last=False)
        return sums.totals()


class _Sums:
    """A session's usage so far: the maximum per API message (one message may be written
    as several lines), the lines without a message id, and the last model named."""

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.offset = 0
        self.per_message: dict[str, tuple[int, ...]] = {}
        self.loose = [0, 0, 0, 0]
        self.model: str | None = None

    def add(self, data: bytes) -> None:
        for raw in data.splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict) or obj.get("type") != "assistant" \
                    or obj.get("sessionId") != self.session_id:
                continue
            message = obj.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if not isinstance(usage, dict):
                continue
            counts = tuple(v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0
                           for v in (usage.get(k) for k in _KEYS))
            if isinstance(message.get("model"), str):
                self.model = message["model"]
            mid = message.get("id")
            if isinstance(mid, str):
                before = self.per_message.get(mid, (0, 0, 0, 0))
                self.per_message[mid] = tuple(map(max, before, counts))
            else:
                self.loose = [a + b for a, b in zip(self.loose, counts)]

    def totals(self) -> tuple[dict[str, int], str | None]:
        totals = [self.loose[i] + sum(c[i] for c in self.per_message.values()) for i in range(4)]
        return dict(zip(_KEYS, totals)), self.model


def usage_of(path: Path, session_id: str) -> tuple[dict[str, int], str | None] | None:
    """The session's token sums and last model from its whole transcript (one read)."""
    return UsageReader(max_files=1).usage_of(path, session_id)


def default_roots() -> list[Path]:
    """Where Claude Code keeps transcripts for the watcher's user (``config``)."""
    return [Path(p) for p in config.claude_transcript_roots()]
