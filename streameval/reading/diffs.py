"""Unified diffs, read once for everyone: EditLoc, replayed patches and structured hunks.

A model patch (EditLoc), a ``git apply``/``patch`` body inside a shell command, a Claude
``structuredPatch`` or the file diff of a Bash result are all unified-diff hunks. This
module is the one reader of that shape, so a header with a tab (``+++\\tb/x``), a hunk
header with two spaces (``@@  -1``), CRLF line ends or a C-quoted path mean the same thing
wherever they appear. The public evaluator accepts any white space in these headers, so
we do too.

Hunk line counts decide where a hunk ends, as ``git apply`` does: a deleted line whose
text begins with ``--`` is not mistaken for a file header. Anything that is not a diff
line is skipped: agents' patches arrive with prose around them and are sometimes cut short.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

__all__ = ["FileDiff", "Hunk", "changed_runs", "parse_diff"]

_HUNK = re.compile(r"^@@\s+-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?\s+@@")
_HEADER = re.compile(r"^(---|\+\+\+)\s+(.*)$")  # any white space, as the evaluator
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
#: a count past this is not believed: a hunk header claims what its body must hold
_MAX_COUNT = 10_000_000


@dataclass(slots=True)
class Hunk:
    """One hunk: numbers from its header, its body as (tag, text) pairs.

    ``tag`` is ``" "`` (context), ``"-"`` (old line only) or ``"+"`` (new line only).
    Old-file numbers follow the unified-diff convention: a hunk with no old lines
    starts *after* ``old_start``.
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    body: list[tuple[str, str]] = field(default_factory=list)

    @property
    def old_lines(self) -> list[str]:
        return [text for tag, text in self.body if tag != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for tag, text in self.body if tag != "-"]

    def deleted(self) -> list[int]:
        """Old-file numbers of the ``-`` lines."""
        out, line = [], self.old_start
        for tag, _ in self.body:
            if tag == "-":
                out.append(line)
            if tag != "+":
                line += 1
        return out


@dataclass(slots=True)
class FileDiff:
    """The hunks of one file; ``None`` paths stand for ``/dev/null``."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str | None:
        """The file the diff is about: the new name, or the old one for a deletion."""
        return self.new_path if self.new_path is not None else self.old_path


def parse_diff(text: str, strip: int | None = None) -> list[FileDiff]:
    """Every file section of a unified diff, in order.

    Header paths lose git's ``a/``/``b/`` prefix (``strip=None``), or ``strip`` leading
    components where they have more (``patch -pN``). A hunk before any header belongs to
    a file with no name (None paths).
    """
    files: list[FileDiff] = []
    lines = _Lines(text)
    old: str | None = None
    current: FileDiff | None = None
    seen_old = False
    for line in lines:
        if line.startswith("diff --git "):
            current, old, seen_old = None, None, False
            continue
        header = _HEADER.match(line)
        if header is not None and not _HUNK.match(line):
            name = _header_path(header.group(2), strip)
            if header.group(1) == "---":
                old, seen_old, current = name, True, None
            else:
                current = FileDiff(old if seen_old else name, name)
                files.append(current)
            continue
        m = _HUNK.match(line)
        if m is None:
            continue
        if current is None:
            current = FileDiff(None, None)
            files.append(current)
        hunk = Hunk(int(m[1]), _count(m[2]), int(m[3]), _count(m[4]))
        _walk(lines, hunk)
        current.hunks.append(hunk)
    return files


def changed_runs(hunk: Hunk) -> list[Hunk]:
    """The hunk cut at its context lines: one smaller hunk per run of changed lines.

    Tools wrap a change in about three context lines on each side; locating a change by
    number wants only the lines that changed, so each run of ``-``/``+`` lines becomes a
    hunk of its own (unified-diff numbering kept: no old line means *after* old_start).
    """
    out: list[Hunk] = []
    old, new = hunk.old_start, hunk.new_start
    if hunk.old_count == 0:
        old += 1
    if hunk.new_count == 0:
        new += 1
    run: Hunk | None = None
    for tag, text in hunk.body:
        if tag in "-+":
            if run is None:
                run = Hunk(old, 0, new, 0)
            run.body.append((tag, text))
            if tag == "-":
                run.old_count += 1
                old += 1
            else:
                run.new_count += 1
                new += 1
            continue
        if run is not None:
            out.append(_numbered(run))
            run = None
        old += 1
        new += 1
    if run is not None:
        out.append(_numbered(run))
    return out


def hunk_from_lines(old_start: int, new_start: int, lines: Iterable[str]) -> Hunk:
    """A hunk from tagged lines (``" x"``, ``"-x"``, ``"+x"``), as structured patches give."""
    hunk = Hunk(old_start, 0, new_start, 0)
    for line in lines:
        tag = line[:1]
        if tag == "\\":
            continue
        tag = tag if tag in "-+" else " "
        hunk.body.append((tag, line[1:]))
        if tag != "+":
            hunk.old_count += 1
        if tag != "-":
            hunk.new_count += 1
    return hunk


# --------------------------------------------------------------------------- pieces


def _numbered(run: Hunk) -> Hunk:
    """Unified-diff convention for a run that has no old (or no new) line."""
    if run.old_count == 0:
        run.old_start -= 1
    if run.new_count == 0:
        run.new_start -= 1
    return run


class _Lines:
    """Diff lines (CR of CRLF removed); a hunk walker can push one line back."""

    def __init__(self, text: str):
        # split("\n"), not splitlines(): a form feed or U+2028 inside a source line must
        # not start a new diff line
        self._it: Iterator[str] = (ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n"))
        self._back: list[str] = []

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return self._back.pop() if self._back else next(self._it)

    def push_back(self, line: str) -> None:
        self._back.append(line)


def _count(text: str | None) -> int:
    if text is None:
        return 1   # "@@ -5 +5 @@": a count of one
    return min(int(text), _MAX_COUNT)


def _walk(lines: _Lines, hunk: Hunk) -> None:
    """Consume one hunk's body. ``' '`` (or an empty line, from tools that strip trailing
    blanks) is context, ``'-'`` old, ``'+'`` new, ``'\\'`` ignored; the hunk ends when
    its counts are used up or a line that cannot belong to a hunk appears (handed back)."""
    old_left, new_left = hunk.old_count, hunk.new_count
    while old_left > 0 or new_left > 0:
        line = next(lines, None)
        if line is None:
            break
        tag = line[:1]
        if tag in (" ", ""):
            hunk.body.append((" ", line[1:]))
            old_left, new_left = old_left - 1, new_left - 1
        elif tag == "-":
            hunk.body.append(("-", line[1:]))
            old_left -= 1
        elif tag == "+":
            hunk.body.append(("+", line[1:]))
            new_left -= 1
        elif tag != "\\":
            lines.push_back(line)
            break


def _header_path(text: str, strip: int | None) -> str | None:
    """The path of a ``---``/``+++`` header; None for ``/dev/null``.

    GNU diff appends a tab and a timestamp; git appends a tab to names with spaces and
    C-quotes names with unusual characters.
    """
    name = text.split("\t", 1)[0].strip()
    if name.startswith('"'):
        name = _unquote(name)
    if name == "/dev/null" or not name:
        return None
    if strip is None:
        return name[2:] if name.startswith(("a/", "b/")) else name
    parts = name.split("/")
    if strip and len(parts) > strip:
        name = "/".join(parts[strip:])
    return name


def _unquote(quoted: str) -> str:
    """Undo git's C-style quoting (``"a/caf\\303\\251.py"``); bytes decode as UTF-8."""
    body = quoted[1:-1] if len(quoted) > 1 and quoted.endswith('"') else quoted[1:]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out += ch.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1] in "01234567" and len(body) >= i + 4:
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
            i += 2
    return out.decode("utf-8", errors="replace")
