"""One edited file: its current lines and which base-commit line each one is.

The mapping is a list of *runs* ``[length, base_start]``: ``length`` consecutive
current lines that are base lines ``base_start, base_start+1, ...``, or lines the
agent wrote itself (``base_start is None``). An edit splices the runs around the lines
it touched, so its cost is proportional to the edit plus the number of runs (which
grows by at most two per edit), not to the file.

The provisional patch (docs/metrics.md §7) is read off the same runs: a base line no current
line maps to was deleted, so the patch and the mapping can never disagree.
"""

from __future__ import annotations

import difflib
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

__all__ = ["LineMap", "block_ids", "compress", "decode_text", "patch_of", "split_lines"]


def decode_text(data: bytes) -> str:
    """Bytes -> str without ever failing: UTF-8, undecodable bytes kept as surrogates.

    ``surrogateescape`` keeps every byte (and so every newline) where it was, so line
    numbers are those of the raw file whatever its encoding.
    """
    return data.decode("utf-8", errors="surrogateescape")


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept; only ``\\n`` ends a line (as in ``repo.LineIndex``).

    ``"a\\nb"`` and ``"a\\nb\\n"`` both have two lines; ``""`` has none. ``str.splitlines``
    is not used: it also breaks on ``\\r``, form feeds and Unicode separators.
    """
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass(slots=True)
class LineMap:
    """One edited file: current lines, runs current -> base, what we know about it."""

    base: list[str] | None            # base-commit lines (None: unknown, no repo)
    lines: list[str] | None           # current lines (None: unknown)
    runs: list[list]                  # [length, base_start | None], in current order
    uncertain: bool = False
    edited: bool = False
    #: what reads showed since the last recorded edit (``observed.Seen``), if anything
    seen: Any = None
    _starts: list[int] | None = field(default=None, repr=False)   # cached run starts
    _text: str | None = field(default=None, repr=False)           # cached joined text
    _offsets: list[int] | None = field(default=None, repr=False)  # cached line offsets
    #: cached (text index of the current lines, base id of each): what reads align with
    _ref: Any = field(default=None, repr=False)

    # ---------------------------------------------------------------- derived caches
    def changed(self) -> None:
        self._starts = self._text = self._offsets = self._ref = None
        self.edited = True

    def starts(self) -> list[int]:
        """0-based current line where each run starts (cached until the next edit)."""
        if self._starts is None:
            self._starts = [0, *accumulate(r[0] for r in self.runs)][:-1]
        return self._starts

    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self.lines or ())
        return self._text

    def offsets(self) -> list[int]:
        """Character offset where each current line starts."""
        if self._offsets is None:
            self._offsets = [0, *accumulate(len(s) for s in self.lines or ())]
        return self._offsets

    def line_at(self, offset: int) -> int:
        """0-based index of the current line holding character ``offset``."""
        return bisect_right(self.offsets(), offset) - 1

    def num_lines(self) -> int | None:
        if self.lines is None:
            return None
        return len(self.lines)

    # ---------------------------------------------------------------- mapping
    def ids(self, start: int, count: int) -> list[int | None]:
        """Base line (or None) of each current line ``start .. start+count-1`` (0-based)."""
        out: list[int | None] = []
        if count <= 0:
            return out
        starts = self.starts()
        i = max(0, bisect_right(starts, start) - 1)
        pos = start
        end = start + count
        while pos < end and i < len(self.runs):
            length, base = self.runs[i]
            run_end = starts[i] + length
            take = min(end, run_end) - pos
            if take > 0:
                off = pos - starts[i]
                out.extend(range(base + off, base + off + take) if base is not None
                           else [None] * take)
                pos += take
            i += 1
        return out

    def splice(self, start: int, count: int, new_ids: list[int | None]) -> None:
        """Replace the mapping of current lines ``start .. start+count-1`` by ``new_ids``."""
        starts = self.starts()
        runs = self.runs
        i = max(0, bisect_right(starts, start) - 1) if runs else 0
        # runs fully before the block stay; the run holding `start` may be cut
        head = runs[:i]
        tail: list[list] = []
        j = i
        end = start + count
        while j < len(runs) and starts[j] < end:
            j += 1
        # pieces of runs i..j-1 outside [start, end)
        for k in range(i, j):
            length, base = runs[k]
            s = starts[k]
            if s < start:
                head.append([start - s, base])
            if s + length > end:
                cut = end - s
                tail.append([s + length - end, None if base is None else base + cut])
        middle = compress(new_ids)
        self.runs = _merge([*head, *middle, *tail, *runs[j:]], len(head) - 1,
                           len(head) + len(middle) + len(tail))
        self.changed()


def _continues(last: list, base: int | None) -> bool:
    """Does a run starting at ``base`` extend run ``last``? (both unmapped, or adjacent)"""
    if base is None or last[1] is None:
        return base is None and last[1] is None
    return last[1] + last[0] == base


def compress(ids: list[int | None]) -> list[list]:
    """Per-line ids -> runs."""
    runs: list[list] = []
    for b in ids:
        if runs and _continues(runs[-1], b):
            runs[-1][0] += 1
        else:
            runs.append([1, b])
    return runs


def _merge(runs: list[list], lo: int, hi: int) -> list[list]:
    """Merge touching runs between indexes ``lo`` and ``hi`` (the spliced zone)."""
    lo = max(lo, 0)
    out = runs[:lo]
    for r in runs[lo:hi + 1]:
        if r[0] <= 0:
            continue
        if out and _continues(out[-1], r[1]):
            out[-1][0] += r[0]
        else:
            out.append(list(r))
    out.extend(runs[hi + 1:])
    return out


def block_ids(old_lines: list[str], old_ids: list[int | None],
               new_lines: list[str]) -> list[int | None]:
    """Ids of ``new_lines``: unchanged lines keep their id, the rest are agent-written."""
    new_ids: list[int | None] = [None] * len(new_lines)
    if not old_lines or not new_lines:
        return new_ids
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=len(old_lines) > 2000)
    for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            new_ids[j1:j1 + (i2 - i1)] = old_ids[i1:i2]
    return new_ids



def _nl(line: str) -> str:
    """A diff body line; a last line without newline gets git's marker after it."""
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def patch_of(path: str, f: LineMap) -> str:
    """Hunks between kept base runs: missing base lines are '-', agent lines are '+'."""
    assert f.base is not None and f.lines is not None
    base, cur = f.base, f.lines
    hunks: list[str] = []
    next_base, pos = 1, 0          # next base line expected, 0-based current line
    added: list[int] = []          # 0-based current lines of the pending hunk

    def flush(upto_base: int) -> None:
        deleted = range(next_base, upto_base)
        if not deleted and not added:
            return
        old_start = next_base if deleted else next_base - 1
        new_start = added[0] + 1 if added else pos
        body = [f"@@ -{old_start},{len(deleted)} +{new_start},{len(added)} @@\n"]
        body += ["-" + _nl(base[k - 1]) for k in deleted]
        body += ["+" + _nl(cur[k]) for k in added]
        hunks.append("".join(body))
        added.clear()

    for length, b in f.runs:
        if b is None:
            added.extend(range(pos, pos + length))
        else:
            flush(b)
            next_base = b + length
        pos += length
    flush(len(base) + 1)
    if not hunks:
        return ""
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


