"""Repository access: the bytes of a path at a commit, and line <-> byte offsets.

INTERFACE STUB (owned by the core-access helper): signatures below are the contract
other modules code against. Replace the bodies; keep the names and semantics.
"""

from __future__ import annotations


class LineIndex:
    """Line starts of one file's bytes (METRICS.md section 3, "Line range -> bytes").

    ``off[k]`` is the byte where line k starts (line 1 at 0; a line starts after
    every ``\\n``). ``size`` is the file's length in bytes.
    """

    def __init__(self, data: bytes): ...

    @property
    def size(self) -> int: ...

    @property
    def num_lines(self) -> int:
        """Lines a reader sees: ``b"a\\nb"`` and ``b"a\\nb\\n"`` both have 2; ``b""`` has 0."""

    def byte_range(self, start: int, end: int) -> tuple[int, int] | None:
        """Inclusive byte interval of lines ``start..end`` per METRICS.md section 3.

        ``start = max(1, start)``, ``end = max(start, end)``; a start past the last
        line start gives None; an empty file gives ``(0, 0)``.
        """

    def line_of(self, byte: int) -> int:
        """1-based line holding ``byte``."""


class RepoView:
    """One repository at one commit (or a plain directory). Cheap to share."""

    key: tuple[str, str]  # (repository identity, commit or "") for cache keys

    def read(self, path: str) -> bytes | None:
        """Bytes of the regular file ``path`` (repo-relative), or None if it is not one."""

    def is_file(self, path: str) -> bool: ...

    def line_index(self, path: str) -> LineIndex | None:
        """Cached per (repo, commit, path); None when ``path`` is not a regular file."""

    def resolve(self, path: str) -> str | None:
        """A predicted path -> repo-relative path (METRICS.md section 2), or None.

        Strips quotes, white space, ``./`` and leading ``/``; tries the path, then
        with 1, 2, ... leading components dropped. Never escapes the repo.
        """
