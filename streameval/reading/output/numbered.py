"""Numbered file lines: ``cat -n``, ``nl -ba``, Claude's Read, editor views, SWE-agent windows.

Shapes, each anchored at the start of a line:

- ``"    12\\ttext"``: ``cat -n``, ``nl -ba``, ``str_replace_editor view``, Claude Code 2.1's
  Read (``"4\\tdef sub(...)"``);
- ``"    12→text"``: Claude Code's Read before 2.1;
- ``"12:text"``: SWE-agent 0.x's ``open``/``goto``/``scroll`` window, under a
  ``[File: /p (N lines total)]`` header (``FILE_WINDOW``);
- ``"12|text"``: OpenHands' file skills (the same window, ``PIPE_LINE``) and MCP tools;
- ``"    12 text"``: SWE-agent's abbreviated view of a large file (``loose``), where a line
  ``"   102 ... eliding lines 102-108 ..."`` stands for lines that were *not* shown;
- ``"    12  text"``: ``nl``/``cat -n`` output passed through a terminal (OpenHands' SDK
  shell), which turned the tab into spaces up to the next 8-column stop and trimmed
  the first line's leading blanks; read only when no line has a tab or an arrow.

The text after the number is the file's line as the tool printed it. Lines of the output
that are not numbered file lines (a header such as "Here's the result of running `cat -n`",
a note, a ``(12 more lines below)`` footer) are not part of the file and are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter

from streameval.model import Read, Shown

__all__ = ["Numbered", "parse_numbered", "numbered_runs", "numbered_read",
           "has_numbered_lines", "FILE_WINDOW", "PIPE_LINE"]

#: the header of a window of a file (SWE-agent 0.x, OpenHands' file skills): path, N
FILE_WINDOW = re.compile(r"^\[File: (.+?) \((\d+) lines total\)\]", re.M)
#: ``12|text``: a numbered line of OpenHands' windows (number, text)
PIPE_LINE = re.compile(r"^(\d{1,9})\|(.*?)\r?$", re.M)

_TAB = re.compile(r"^[ \t]*(\d{1,9})(?:\t|→)(.*)$", re.M)
_COLON = re.compile(r"^(\d{1,9}):(.*)$", re.M)
_LOOSE = re.compile(r"^[ \t]*(\d{1,9})(?:\t|→| |$)(.*)$")
_EXPANDED = re.compile(r"^( *)(\d{1,9})(?:( +)(.*?)|)\r?$", re.M)
#: SWE-agent's abbreviated view: the body of a definition that was left out
ELISION = re.compile(r"^\s*\d{1,9} \.\.\. eliding lines \d+-\d+ \.\.\.\s*$")
_SEARCH = re.compile(r"^[ \t]*\d{1,9}(?:\t|→)", re.M)
#: the output's last line only a number: a numbered blank line whose tab was trimmed
_TRIMMED_LAST = re.compile(r"[ \t]*(\d{1,9})[ \t]*")   # the whole last line (fullmatch)


@dataclass(slots=True)
class Numbered:
    """Numbered lines in output order: ``numbers[i]`` is printed beside ``lines[i]``."""

    numbers: list[int]
    lines: list[str]


def has_numbered_lines(text: str) -> bool:
    """Does the output hold at least one ``N<tab>`` / ``N→`` line?"""
    return _SEARCH.search(text) is not None


def parse_numbered(text: str, style: str = "tab") -> Numbered:
    """The numbered lines of an output, in order. ``style``: ``tab`` (tab or arrow),
    ``colon`` (SWE-agent 0.x windows) or ``loose`` (also a plain space: SWE-agent's
    abbreviated view, whose elision markers are left out)."""
    if style == "tab" and "\r" not in text:
        run = _one_run(text)
        if run is not None:
            return run
    if style != "loose":
        return _by_expression(text, style)
    pattern = _LOOSE
    numbers: list[int] = []
    lines: list[str] = []
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if ELISION.match(line):
            continue
        m = pattern.match(line)
        if m is None:
            continue
        n = int(m.group(1))
        if n <= 0:
            continue
        numbers.append(n)
        lines.append(m.group(2))
    return Numbered(numbers, lines)


def _by_expression(text: str, style: str) -> Numbered:
    """``tab`` or ``colon`` lines, found by one regular expression (C speed)."""
    found = (_TAB if style == "tab" else _COLON).findall(text)
    if not found:
        return _expanded(text) if style == "tab" else Numbered([], [])
    digits, texts = zip(*found)    # (numbers, texts) in C, no loop of ours
    numbers = list(map(int, digits))
    lines = list(texts)
    if "\r" in text:
        lines = [t[:-1] if t.endswith("\r") else t for t in lines]
    end = _TRIMMED_LAST.fullmatch(text, text.rfind("\n") + 1) if style == "tab" and found else None
    if end is not None and int(end.group(1)) == numbers[-1] + 1:
        # `cat -n f` whose last line is blank, in a harness that trims the output's
        # trailing white space (Claude Code): the number alone, its tab gone
        numbers.append(int(end.group(1)))
        lines.append("")
    if 0 in numbers:    # "0" is no line number
        keep = [i for i, k in enumerate(numbers) if k > 0]
        numbers, lines = [numbers[i] for i in keep], [lines[i] for i in keep]
    return Numbered(numbers, lines)


#: the numbers printed the way ``cat -n``, ``nl`` and Claude's Read (before 2.1) print
#: them: right-aligned in 6 columns; below that width, every line's head is 7 wide
_PADDED = 6
#: line heads made once per process for the bulk check (``_heads``): lines 1.._MAX_HEAD
_MAX_HEAD = 1 << 16
_HEADS: dict[tuple[bool, str], list[str]] = {}


def _heads(padded: bool, sep: str, last: int) -> list[str] | None:
    """``heads[n - 1]`` is how line n's head is printed (``"    12→"``, ``"12\t"``),
    for n up to at least ``last``; None past ``_MAX_HEAD``. Made once and grown by
    doubling: a constant table, the same in every process."""
    if last > _MAX_HEAD:
        return None
    heads = _HEADS.get((padded, sep))
    if heads is None or len(heads) < last:
        size = min(_MAX_HEAD, max(last, 2 * len(heads) if heads else 4096))
        heads = [f"{n:>{_PADDED}}{sep}" if padded else f"{n}{sep}" for n in range(1, size + 1)]
        _HEADS[(padded, sep)] = heads
    return heads


def _one_run(text: str) -> Numbered | None:
    """The usual numbered output, checked rather than parsed: every line numbered, one
    run of numbers, all printed the same way (``cat -n``'s padded ``   12<tab>``, Claude's
    ``   12→``, or Claude 2.1's ``12<tab>``), perhaps ending in a numbered blank line whose
    separator a harness trimmed. Its numbers and texts are exactly what the regular
    expression finds; None when the output is anything else (the expression decides).

    The regular expression makes four objects of every line, in Python's engine; here
    each line is compared with its head from a table (in C) and its text cut off: a
    Read of 85 lines costs a third as much."""
    rows = text.split("\n")
    m = _TAB.match(rows[0])
    if m is None:
        return None
    first = int(m.group(1))
    k = len(rows)
    head = rows[0][:m.end(1)]
    sep = rows[0][m.end(1)]
    last = first + k - 1
    trimmed = False
    if k > 1 and sep not in rows[-1]:
        # a blank last line whose separator (and nothing else) a harness trimmed
        t = _TRIMMED_LAST.fullmatch(rows[-1])
        if t is None or int(t.group(1)) != last:
            return None
        trimmed = True
        rows.pop()
    if first < 1:
        return None
    padded = head != str(first)
    if padded and (head != f"{first:>{_PADDED}}" or last >= 10 ** _PADDED):
        return None    # neither way: the expression decides
    heads = _heads(padded, sep, last)
    if heads is None or not all(map(str.startswith, rows, islice(heads, first - 1, None))):
        return None
    if padded:
        lines = list(map(itemgetter(slice(_PADDED + 1, None)), rows))
    else:   # Claude 2.1: the head grows a digit at every power of ten
        lines = []
        at, width = 0, len(head) + 1
        while at < len(rows):
            top = min(len(rows), 10 ** (width - 1) - first)
            lines += map(itemgetter(slice(width, None)), rows[at:top])
            at, width = top, width + 1
    if trimmed:
        lines.append("")
    return Numbered(list(range(first, last + 1)), lines)


def _expanded(text: str) -> Numbered:
    """``nl``-style lines whose tab a terminal expanded: the number ends at a column
    before an 8-column stop, the spaces up to it are the tab, the rest is the line.
    Every non-blank line must look so (else it is not such an output)."""
    numbers: list[int] = []
    lines: list[str] = []
    rows = [r for r in text.split("\n") if r.strip()]
    for m in map(_EXPANDED.match, rows):
        if m is None:
            return Numbered([], [])
        lead, digits, gap, rest = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
        width = len(lead) + len(digits)
        tab = 8 - width % 8
        if gap and len(gap) < tab and rest:
            return Numbered([], [])
        numbers.append(int(digits))
        lines.append(gap[tab:] + rest if len(gap) >= tab else rest)
    if len(numbers) < 2 or not any(lines) or \
            any(b != a + 1 for a, b in zip(numbers, numbers[1:])):
        return Numbered([], [])   # too little to be sure (``seq 3``), or not a run
    return Numbered(numbers, lines)


def numbered_read(path: str, numbers: Sequence[int], lines: Sequence[str],
                  base: bool = False, loose: bool = False, cut_head: bool = False,
                  cut_tail: bool = False, end_piece: bool = False) -> Read:
    """What one output showed of one file, by printed numbers: ONE read, however
    scattered the numbers (grep hits, an elided view). Its window is first..last
    printed; the numbers say which lines, and alignment works on them all at once.
    ``cut_head``/``cut_tail``: a harness cut the output just before the first (after
    the last) line, which may be only a piece of its line; ``end_piece``: see ``Shown``."""
    ordered = sorted(numbers)   # (as a rule in order already: a pass in C, cheaper than min, max)
    return Read(path, ordered[0], ordered[-1],
                shown=Shown(tuple(lines), tuple(numbers), base=base, loose=loose,
                            cut_head=cut_head, cut_tail=cut_tail, end_piece=end_piece))


def numbered_runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted runs of consecutive numbers (the lines shown, as ranges)."""
    if numbers and numbers[-1] - numbers[0] == len(numbers) - 1 and \
            list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return [(numbers[0], numbers[-1])]      # one run in order: the usual output
    runs: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if runs and runs[-1][1] + 1 == n:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs
