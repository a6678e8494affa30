"""Provenance tags: an invisible id at the end of every line of the tagged copy.

Why a tag in the text itself: the re-executed command (``grep``, ``sed -n``, ``awk``,
a pipe of them) carries it to the output untouched, whatever it does to the line's
position, so the output says for every shown line where it came from without us
modelling the command.

A tag is ``MARK`` followed by ``width`` base-3 digits written with three zero-width
characters (U+200B, U+200C, U+200D); ``MARK`` is U+2063 (INVISIBLE SEPARATOR). It sits
just before the line end (before ``\\r\\n`` or ``\\n``, or at the end of a last line without
one). Ids index an ``IdTable``: base lines of the base commit, then one id per file for
"a line the agent wrote" (the file is known, the base line is not: there is none).
Stripping removes only complete tags, so a tag cut in half (``cut -c``, a harness cut)
leaves residue and the stripped output no longer equals the plain one: such a call is
not checkable, rather than silently credited.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

MARK = "\u2063"
DIGITS = "\u200b\u200c\u200d"
#: ids kept free after the base lines, for "agent line of file F" ids made later
AGENT_ROOM = 200_000
_VALUE = {c: i for i, c in enumerate(DIGITS)}
_LOW = 6
_LOW_COUNT = 3 ** _LOW


def _low_digits(value: int) -> str:
    out = []
    for _ in range(_LOW):
        value, d = divmod(value, 3)
        out.append(DIGITS[d])
    return "".join(reversed(out))


_LOW_TABLE = [_low_digits(v) for v in range(_LOW_COUNT)]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one shown line came from: ``line`` is its base line, None for the agent's."""

    path: str
    line: int | None


@dataclass
class IdTable:
    """Ids of (path, base line) and (path, agent); built once per laid-out base commit.

    Base ids are dense: file ``k`` owns ids ``starts[k] .. starts[k] + counts[k] - 1``, so
    a lookup is a bisect, and the table for a million-line tree is three lists.
    """

    paths: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    next_id: int = 1            # 0 is never used: an all-zero tag is easy to forge
    agent_ids: dict[str, int] = field(default_factory=dict)
    agent_paths: dict[int, str] = field(default_factory=dict)
    width: int = 0

    def add_file(self, path: str, n_lines: int) -> int:
        """Reserve ids for a base file's lines; returns the id of its line 1."""
        first = self.next_id
        self.paths.append(path)
        self.starts.append(first)
        self.counts.append(n_lines)
        self.next_id += n_lines
        return first

    def freeze(self) -> None:
        """Fix the tag width: enough digits for every base id and the agent room (at
        least ``_LOW`` digits: the low ones come from a table, see ``tag``)."""
        top = self.next_id + AGENT_ROOM
        width = _LOW
        while 3 ** width <= top:
            width += 1
        self.width = width
        self._high_cache: dict[int, str] = {}

    def agent(self, path: str) -> int:
        """The id meaning "a line the agent wrote in ``path``"."""
        got = self.agent_ids.get(path)
        if got is None:
            got = self.next_id
            if got >= 3 ** self.width:
                raise OverflowError("agent id room exhausted")
            self.next_id += 1
            self.agent_ids[path] = got
            self.agent_paths[got] = path
        return got

    def origin(self, ident: int) -> Origin | None:
        path = self.agent_paths.get(ident)
        if path is not None:
            return Origin(path, None)
        k = bisect_right(self.starts, ident) - 1
        if k < 0 or ident >= self.starts[k] + self.counts[k]:
            return None
        return Origin(self.paths[k], ident - self.starts[k] + 1)

    # ---------------------------------------------------------------- text
    def tag(self, ident: int) -> str:
        """``MARK`` and ``width`` digits, most significant first. A tree has a million
        lines: the low digits come from a table and the high ones are cached, since the
        ids of one file are consecutive."""
        high, low = divmod(ident, _LOW_COUNT)
        prefix = self._high_cache.get(high)
        if prefix is None:
            digits = []
            for _ in range(self.width - _LOW):
                high, d = divmod(high, 3)
                digits.append(DIGITS[d])
            prefix = self._high_cache[divmod(ident, _LOW_COUNT)[0]] = \
                MARK + "".join(reversed(digits))
        return prefix + _LOW_TABLE[low]

    def tags(self, first: int, n: int) -> list[str]:
        """The tags of ids ``first .. first + n - 1``, a run of table rows at a time."""
        out: list[str] = []
        ident, stop = first, first + n
        while ident < stop:
            low = ident % _LOW_COUNT
            take = min(_LOW_COUNT - low, stop - ident)
            prefix = self.tag(ident)[:-_LOW]
            out.extend([prefix + d for d in _LOW_TABLE[low:low + take]])
            ident += take
        return out

    def pattern(self) -> re.Pattern[str]:
        return re.compile(MARK + "[" + DIGITS + "]{" + str(self.width) + "}")

    def decode(self, tag: str) -> int:
        value = 0
        for c in tag[1:]:
            value = value * 3 + _VALUE[c]
        return value


def split_line_end(line: str) -> tuple[str, str]:
    """(text, line end) of one line kept with its end (``\\r\\n``, ``\\n`` or none)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def lines_of(text: str) -> list[str]:
    """Lines with their ends, split at ``\\n`` only (``str.splitlines`` also splits at
    form feeds and U+2028, which no shell tool counts as line ends)."""
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def tag_lines(lines: list[str], ids: list[int], table: IdTable) -> str:
    """The tagged text of a file whose line ``k`` has id ``ids[k]``."""
    out = []
    tag = table.tag
    for line, ident in zip(lines, ids):
        if line.endswith("\n"):
            cut = -2 if line.endswith("\r\n") else -1
            out.append(line[:cut] + tag(ident) + line[cut:])
        else:
            out.append(line + tag(ident))
    return "".join(out)


def tag_text(text: str, first: int, table: IdTable) -> tuple[str, int]:
    """A base file's text tagged with consecutive ids from ``first`` (the fast path of
    the layout: a tree has about a million lines); returns it and its line count."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
        end = "\n"
    else:
        end = ""
    if not parts:
        return text, 0
    if "\r\n" in text:
        lines = lines_of(text)
        return tag_lines(lines, list(range(first, first + len(lines))), table), len(lines)
    tags = table.tags(first, len(parts))
    return "\n".join([p + t for p, t in zip(parts, tags)]) + end, len(parts)


def untag_file(tagged: str, table: IdTable) -> tuple[list[str], list[int | None]]:
    """A tagged file back to its plain lines and their ids (None: the line carries no
    complete tag at its end, e.g. a file the harness wrote untagged)."""
    pat = table.pattern()
    lines: list[str] = []
    ids: list[int | None] = []
    tail = len(MARK) + table.width
    for line in lines_of(tagged):
        text, end = split_line_end(line)
        ident = None
        if len(text) >= tail and text[-tail] == MARK and pat.fullmatch(text[-tail:]):
            ident = table.decode(text[-tail:])
            text = text[:-tail]
        lines.append(text + end)
        ids.append(ident)
    return lines, ids


def read_tags(line: str, pat: re.Pattern[str], table: IdTable) -> tuple[str, list[int]]:
    """One output line of the tagged run: its text without tags, and every id in it (a
    command that joins lines, ``paste`` or ``sed N``, shows several)."""
    ids = [table.decode(m.group(0)) for m in pat.finditer(line)]
    return (pat.sub("", line) if ids else line), ids
