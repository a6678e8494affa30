"""The base commit's text of a file, line by line, with an index from text to lines.

Alignment asks two things of a file at the base commit: "is line k's text this?" (the
fast path: a read where the agent's own edits moved nothing) and "which lines have this
text?" (to place text that moved). The first needs only the lines; the index for the
second is built on first use. Both are cached per (repository, commit, path) in a
bounded LRU, shared by every run of a process, like the symbol index.

Texts are compared *normalized*: trailing white space and the line end dropped, tabs
expanded, because tools print lines that way (SWE-agent's editor expands tabs, harnesses
strip trailing blanks).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from streameval.sources.filecache import LRU

if TYPE_CHECKING:
    from streameval.sources.repo import RepoView

__all__ = ["BaseText", "BaseTexts", "norm"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: ASCII white space other than the newline: before a newline, it would be stripped
_BLANKS_BEFORE_NEWLINE = tuple(c + "\n" for c in " \x0b\x0c\x1c\x1d\x1e\x1f")


def _plain(text: str) -> bool:
    """No line of ``text`` changes when normalized (checked with C-speed searches)."""
    if not text.isascii() or "\t" in text or "\r" in text:
        return False
    if text[-1:].isspace() and not text.endswith("\n"):
        return False
    return not any(b in text for b in _BLANKS_BEFORE_NEWLINE)


def norm(line: str) -> str:
    """A line as compared: no line end, no trailing white space, tabs expanded."""
    if "\t" in line:
        line = line.expandtabs()
    return line.rstrip()


class BaseText:
    """One file's base-commit lines (1-based), normalized on demand."""

    __slots__ = ("_raw", "_norm", "_first", "_count", "_many", "size")

    def __init__(self, data: bytes):
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()   # the "line" after a final newline holds nothing
        self._setup(lines, text, len(data))

    @classmethod
    def of_lines(cls, lines: list[str]) -> BaseText:
        """The same index over lines in hand (no line ends): the text of a file as the
        agent's edits made it, which reads of an edited file are aligned with."""
        self = cls.__new__(cls)
        text = "\n".join(lines) + "\n" if lines else ""
        self._setup(lines, text, len(text))
        return self

    def _setup(self, lines: list[str], text: str, size: int) -> None:
        self._raw = lines
        # most files have no tab and no trailing blank: their lines are already normal
        plain = _plain(text)
        self._norm: list[str | None] = lines if plain else [None] * len(lines)
        self._first: dict[str, int] | None = None    # text -> first line with it
        self._count: Counter[str] | None = None
        self._many: dict[str, list[int]] = {}         # repeated texts, found on demand
        self.size = size

    def __len__(self) -> int:
        return len(self._raw)

    @property
    def raw_lines(self) -> list[str]:
        """The lines as the file has them (no newline), line k at index k-1."""
        return self._raw

    def line(self, k: int) -> str | None:
        """Normalized text of line ``k`` (1-based), None past the ends."""
        if not 1 <= k <= len(self._raw):
            return None
        got = self._norm[k - 1]
        if got is None:
            got = self._norm[k - 1] = norm(self._raw[k - 1])
        return got

    def positions(self, text: str) -> list[int]:
        """Sorted line numbers whose normalized text is ``text`` (already normalized).

        The index is built once, at C speed (a first-occurrence map and a count); the
        lines of a repeated text are listed when first asked for.
        """
        if self._first is None:
            norms = self._norm if self._norm is self._raw else [
                x.rstrip() if "\t" not in x else x.expandtabs().rstrip() for x in self._raw]
            self._norm = norms
            n = len(norms)
            self._first = dict(zip(reversed(norms), range(n, 0, -1)))
            self._count = Counter(norms)
        count = self._count.get(text, 0) if self._count is not None else 0
        if count == 0:
            return []
        if count == 1:
            return [self._first[text]]
        found = self._many.get(text)
        if found is None:
            norms = self._norm
            found = self._many[text] = [k for k, t in enumerate(norms, 1) if t == text]
        return found

    def ends_with(self, k: int, tail: str) -> bool:
        """Can ``tail`` (normalized) be what a harness's cut left of line k's end? An
        empty one can: the cut left only the line's end (blanks, its newline)."""
        got = self.line(k)
        return got is not None and got.endswith(tail)

    def starts_with(self, k: int, head: str) -> bool:
        """Can ``head`` (normalized) be what a harness's cut left of line k's start? An
        empty one can: the cut left only the line's indentation."""
        got = self.line(k)
        return got is not None and got.startswith(head)


class BaseTexts:
    """Bounded cache of ``BaseText`` per (repository, commit, path, version)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self._cache: LRU[tuple, BaseText] = LRU(max_bytes, lambda t: t.size + 1)

    @property
    def hits(self) -> int:     # read by the exporter (streameval_cache_hits_total)
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    def get(self, view: RepoView, path: str) -> BaseText | None:
        """The base text of a repository file; None when ``path`` is not one."""
        key = (view.key, path, view.version(path))
        found = self._cache.get(key)
        if found is not None:
            return found
        data = view.read(path)
        if data is None:
            return None
        text = BaseText(data)
        self._cache.put(key, text)
        return text
