"""grep / rg / ag / ``git grep`` and Claude's Grep output: which lines of which files it showed.

Shapes (one parser for every tool that prints them):

- several files: ``path:N:text`` (a match) and ``path-N-text`` (``-A/-B/-C`` context), or
  without ``-n`` ``path:text`` / ``path-text``;
- one file searched: ``N:text`` / ``N-text``, or the bare text lines without ``-n``;
- rg's heading mode: a path line, then ``N:text`` lines until a blank line;
- ``--`` between groups of context.

A context line is matched against the file names already seen on match lines, since a
name may itself contain ``-``; context lines before their file's first match wait for it.
With context (``-A/-B/-C``) each group between ``--`` separators is a run of consecutive
lines of one file (``GrepHits.runs``), and a blank line of the file is printed too: as
an empty line when one file is searched without ``-n``.
A "path" must look like one: no white space unless it has a ``/``, so ``log: 12:30:01``
is a line of text, not line 30 of a file called ``log: 12``.

The text of each line is kept: it is what ``reading.align`` matches with the base
commit. Without numbers the lines of one file are in file order, gaps unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from streameval.reading.output.harness import is_cut_line

__all__ = ["GrepHits", "GrepShape", "parse_grep", "is_error_line", "looks_like_hit"]

_MATCH = re.compile(r"^(.+?):(\d+):")
_CONTEXT = re.compile(r"^(.+?)-(\d+)-")
_NUM_HEAD = re.compile(r"^(\d+)([:-])")
_AFTER_PATH = re.compile(r"([:-])(\d+)\1")             # ``:N:`` / ``-N-`` after a known path
_DASH_NUM = re.compile(r"-(\d+)-")
_SPACE = re.compile(r"\s")
_NOISE = re.compile(r"^(?:Found \d+ (?:files?|lines?|matches)|No (?:files|matches) found|"
                    r"\[Showing results|\(Results are truncated)")


@dataclass(slots=True)
class GrepShape:
    """How the output is laid out, from the command's options.

    ``single``: the one file operand as written (its lines carry no path prefix);
    ``numbered``: ``-n`` was given; ``context``: ``-A/-B/-C`` lines are printed around
    the matches, so each group is a run of consecutive lines.
    """

    tool: str = "grep"
    numbered: bool = True
    single: str | None = None
    context: bool = False


@dataclass(slots=True)
class GrepHits:
    """Per file (raw name as printed, or the single operand): (number or None, text).

    ``runs``: per file, the lengths of its groups of consecutive lines in output order,
    when the output had context (``-A/-B/-C``); None without context (each hit alone)."""

    lines: dict[str, list[tuple[int | None, str]]] = field(default_factory=dict)
    runs: dict[str, list[int]] | None = None
    #: per file, where a harness cut the output: the index in its rows of the first row
    #: after the cut
    cuts: dict[str, list[int]] = field(default_factory=dict)


def is_error_line(line: str, tool: str = "grep") -> bool:
    return line.startswith((f"{tool}: ", "grep: ", "rg: ", "Binary file "))


def parse_grep(lines: list[str], shape: GrepShape) -> GrepHits:
    """The lines each file showed (see the module docstring for the shapes)."""
    if shape.single is not None and shape.numbered and lines:
        hits = _one_file(lines, shape)
        if hits is not None:
            return hits
    return _by_line(lines, shape)


def _by_line(lines: list[str], shape: GrepShape) -> GrepHits:
    """Every line told apart by the parser (any shape)."""
    parser = _Parser(shape)
    if shape.context:
        parser.hits.runs = {}
    for line in lines:
        parser.feed(line)
    parser.flush()
    return parser.hits


#: every line of one file's numbered output (``N:text``, ``N-text``), at once
_NUMBERED_ROW = re.compile(r"^(\d+)[:-](.*)$", re.M)


def _one_file(lines: list[str], shape: GrepShape) -> GrepHits | None:
    """One file searched with ``-n`` whose every line is one of its numbered lines (the
    usual ``grep -n x f``): its hits by one regular expression over the whole output
    (what the parser makes of them, line by line), or None when any line is something
    else (a ``--``, a blank, a notice: the parser decides)."""
    found = _NUMBERED_ROW.findall("\n".join(lines))
    if len(found) != len(lines):   # (a line starting with a number names no file under it)
        return None
    digits, texts = zip(*found)
    hits = GrepHits({shape.single: list(zip(map(int, digits), texts))})
    if shape.context:
        hits.runs = {shape.single: [len(lines)]}
    return hits


class _Parser:
    def __init__(self, shape: GrepShape):
        self.shape = shape
        self.hits = GrepHits()
        self.cur: str | None = None
        self.heading: str | None = None
        self.pending: list[str] = []     # context lines before their file's first match
        self.group: str | None = None    # the file of the group being read (context)

    def _special(self, ln: str) -> bool:
        """A harness's cut notice (each file's rows are cut there), or a bare line of
        the one file searched without ``-n`` (a blank one too): handled here."""
        shape = self.shape
        if ln.startswith("[... ") and is_cut_line(ln):
            self.flush()
            for path, rows in self.hits.lines.items():
                self.hits.cuts.setdefault(path, []).append(len(rows))
            self.cur = self.group = None
            return True
        if shape.single is not None and not shape.numbered and ln != "--" \
                and not ln.startswith(shape.single + "/") and not _NOISE.match(ln) \
                and not is_error_line(ln, shape.tool):
            self._add(shape.single, None, ln)
            return True
        return False

    def feed(self, ln: str) -> None:
        shape = self.shape
        cur = self.cur
        if cur is not None and ln.startswith(cur) and shape.numbered \
                and self.heading is None and shape.single is None \
                and not ln.startswith("[... "):
            # the next line of the file just seen: the usual case, one regex (with no
            # single file, nothing but a cut notice is ``_special``)
            m = _AFTER_PATH.match(ln, len(cur))
            if m is not None:
                if self.pending:
                    self.flush()
                self._add(cur, int(m.group(2)), ln[m.end():])
                return
        if self._special(ln):
            return
        if not ln.strip() or ln == "--":
            self.flush()
            self.group = None
            if not ln.strip():
                self.heading = None
            return
        if _NOISE.match(ln) or is_error_line(ln, shape.tool):
            return
        if (shape.numbered and self.heading is None
                and (shape.single is None or ln.startswith(shape.single + "/"))
                and not _MATCH.match(ln) and not (self.cur and ln.startswith(self.cur))
                and _CONTEXT.match(ln)):
            self.pending.append(ln)
            return
        if shape.context and not shape.numbered and shape.single is None:
            if self.cur is not None and ln.startswith(self.cur + "-"):
                self.flush()
                self._add(self.cur, None, ln[len(self.cur) + 1:])   # a context line
                return
            if ":" not in ln or not _looks_like_path(ln.partition(":")[0]):
                self.pending.append(ln)    # a context line before its file's match
                return
        path, num, text = self._line(ln)
        if path is None:
            if shape.numbered and not shape.single and _looks_like_path(ln.strip()):
                self.heading = ln.strip()
            return
        self.cur = path
        self.flush()
        self._add(path, num, text)

    def _add(self, path: str, num: int | None, text: str) -> None:
        self.hits.lines.setdefault(path, []).append((num, text))
        runs = self.hits.runs
        if runs is not None:
            mine = runs.setdefault(path, [])
            if self.group == path and mine:
                mine[-1] += 1
            else:
                mine.append(1)
                self.group = path

    def flush(self) -> None:
        """Context lines belong to the file of the match next to them."""
        if not self.pending:
            return
        cur = self.cur
        if not self.shape.numbered:
            # unnumbered context before a match: ``path-text`` of the file matched next
            for ln in self.pending:
                if cur is not None and ln.startswith(cur + "-"):
                    self._add(cur, None, ln[len(cur) + 1:])
            self.pending.clear()
            return
        for ln in self.pending:
            m = _DASH_NUM.match(ln, len(cur)) if cur and ln.startswith(cur) else None
            if m and cur:
                self._add(cur, int(m.group(1)), ln[m.end():])
                continue
            m = _CONTEXT.match(ln)
            if m and _looks_like_path(m.group(1)):
                self._add(m.group(1), int(m.group(2)), ln[m.end():])
        self.pending.clear()

    def _line(self, ln: str) -> tuple[str | None, int | None, str]:
        """(raw path, line number, text) of one output line; path None = not a hit."""
        shape = self.shape
        single = shape.single
        if single is not None and not ln.startswith(single + "/"):
            if not shape.numbered:
                return single, None, ln
            m = _NUM_HEAD.match(ln)
            return (single, int(m.group(1)), ln[m.end():]) if m else (None, None, "")
        if shape.numbered:
            if self.heading is not None:
                m = _NUM_HEAD.match(ln)
                if m:
                    return self.heading, int(m.group(1)), ln[m.end():]
            if self.cur is not None and ln.startswith(self.cur):
                m = _AFTER_PATH.match(ln, len(self.cur))
                if m:
                    return self.cur, int(m.group(2)), ln[m.end():]
            m = _MATCH.match(ln) or _CONTEXT.match(ln)
            if m and _looks_like_path(m.group(1)):
                return m.group(1), int(m.group(2)), ln[m.end():]
            return None, None, ""
        path, sep, text = ln.partition(":")
        if not sep or not _looks_like_path(path):
            return None, None, ""
        return path, None, text


def _looks_like_path(name: str) -> bool:
    """Not a number, not empty, no white space unless a ``/`` says it is a path."""
    if not name or name.isdecimal() or name != name.strip():
        return False
    return "/" in name or _SPACE.search(name) is None


def looks_like_hit(line: str, single: bool) -> bool:
    """A ``path:N:``/``path-N-`` line, or ``N:``/``N-`` when one file was searched."""
    return bool(_MATCH.match(line) or _CONTEXT.match(line) or (single and _NUM_HEAD.match(line)))
