"""Tree-sitter definition index per file.

INTERFACE STUB (owned by the symbols helper).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Definition:
    """A symbol: one definition node. Identity is (file, kind, start, end)."""

    file: str
    kind: str
    start_byte: int
    end_byte: int  # inclusive last byte (tree-sitter end_byte - 1)
    name: str = ""


class FileSymbols:
    def overlapping(self, intervals: Iterable[tuple[int, int]]) -> list[Definition]:
        """Definitions sharing at least one byte with any inclusive interval."""

    def named(self, name: str) -> list[Definition]:
        """Every definition called ``name`` (for ``a.b`` the caller passes ``b``)."""


class SymbolIndex:
    """Parses each (repo, commit, path) once; bounded LRU."""

    def __init__(self, max_files: int = 2048): ...

    def for_file(self, view, path: str) -> FileSymbols:
        """Definitions of ``path`` in ``view`` (empty for unknown extensions)."""
