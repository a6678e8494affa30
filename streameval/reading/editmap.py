"""The agent's edits, replayed on the base text, and current -> base-commit line mapping.

METRICS.md section 6 ("Edits"): once the agent has edited a file, the line numbers it
is shown differ from the base commit's. Gold spans are base-commit lines, so every
later read must be mapped back through the edits seen so far. This module keeps, per
repo file, the current text and a mapping from current lines to base lines.

The mapping is a list of *runs* ``[length, base_start]``: ``length`` consecutive
current lines that are base lines ``base_start, base_start+1, ...``, or lines the
agent wrote itself (``base_start is None``). An edit splices the runs around the lines
it touched, so its cost is proportional to the edit plus the number of runs (which
grows by at most two per edit), not to the file. Finding an ``old`` string is a C-speed
``str.find`` over the file; that is the one part that is linear in the file.

Line identity rules (what "the agent wrote" means):

- a replaced block keeps the base identity of the lines it did not change: old and new
  blocks are compared line by line (``difflib``), so the context lines agents put in
  ``old_string``/``new_string`` stay base lines; changed lines become agent-written,
  even when only one character changed (they no longer show the base line);
- ``Write``/``create`` of an existing file is compared with the current text the same
  way; a file not in the base starts empty, so all its lines are agent-written;
- an edit we cannot replay (``sed -i`` other than one command at fixed line numbers,
  a redirect, Codex ``file_change`` without a diff, ``undo_edit``) leaves the mapping
  as it was and marks the file ``uncertain``: that is identity through the unknown
  edit, which is exact when the edit did not move lines and off by the edit's line
  delta below it otherwise. It is the honest choice without the text;
  ``uncertain_files()`` lets reports say so;
- structured hunks with no text (numbers only) are trusted: their new lines are
  agent-written placeholders whose text we do not know.

For the provisional EditLoc (METRICS.md 7), ``deleted_base_lines`` and
``provisional_patch`` are read off the same runs: a base line no current line maps to
was deleted, so the patch and the mapping can never disagree.
"""

from __future__ import annotations

import copy
import difflib
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from ..errors import Reason
from ..intervals import merge_ranges
from ..model import Edit

if TYPE_CHECKING:
    from ..repo import RepoView

__all__ = ["EditMap", "split_lines", "decode_text"]

#: length of the identity run used for files whose base text is unknown (no repo)
_UNBOUNDED = 1 << 40


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
class _File:
    """One edited file: current lines, runs current -> base, what we know about it."""

    base: list[str] | None            # base-commit lines (None: unknown, no repo)
    lines: list[str] | None           # current lines (None: unknown)
    runs: list[list]                  # [length, base_start | None], in current order
    uncertain: bool = False
    edited: bool = False
    _starts: list[int] | None = field(default=None, repr=False)   # cached run starts
    _text: str | None = field(default=None, repr=False)           # cached joined text
    _offsets: list[int] | None = field(default=None, repr=False)  # cached line offsets

    # ---------------------------------------------------------------- derived caches
    def changed(self) -> None:
        self._starts = self._text = self._offsets = None
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
        middle = _compress(new_ids)
        self.runs = _merge([*head, *middle, *tail, *runs[j:]], len(head) - 1,
                           len(head) + len(middle) + len(tail))
        self.changed()


def _continues(last: list, base: int | None) -> bool:
    """Does a run starting at ``base`` extend run ``last``? (both unmapped, or adjacent)"""
    if base is None or last[1] is None:
        return base is None and last[1] is None
    return last[1] + last[0] == base


def _compress(ids: list[int | None]) -> list[list]:
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


def _block_ids(old_lines: list[str], old_ids: list[int | None],
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


class EditMap:
    """Replays the agent's edits per repo file; maps current lines to base lines.

    ``view`` supplies base bytes; without a view (``inspect`` with no repo) the base
    text is unknown: text edits cannot be located, numbered ones (hunks, insertions)
    still shift the identity mapping.
    """

    def __init__(self, view: RepoView | None = None):
        self._view = view
        self._files: dict[str, _File] = {}
        self._patch_cache: dict[str, str] = {}
        self._placeholders = 0
        #: (path, message) of the last failed ``apply``, for callers that report it
        self.last_problem: tuple[Reason, str] | None = None
        #: edited files saved by ``git stash``, newest last
        self._stashes: list[dict[str, _File]] = []

    # ------------------------------------------------------------------ state
    def _file(self, path: str) -> _File:
        f = self._files.get(path)
        if f is None:
            f = self._load(path)
            self._files[path] = f
        return f

    def _load(self, path: str) -> _File:
        if self._view is None:
            return _File(base=None, lines=None, runs=[[_UNBOUNDED, 1]])
        data = self._view.read(path)
        base = split_lines(decode_text(data)) if data is not None else []
        runs = [[len(base), 1]] if base else []
        return _File(base=base, lines=list(base), runs=runs)

    def edited_files(self) -> list[str]:
        return [p for p, f in self._files.items() if f.edited]

    def uncertain_files(self) -> list[str]:
        """Files edited in a way we could not replay (their mapping may be off)."""
        return [p for p, f in self._files.items() if f.uncertain]

    def current_text(self, path: str) -> str | None:
        f = self._file(path)
        return None if f.lines is None else f.text()

    # ------------------------------------------------------------------ queries
    def num_lines(self, path: str) -> int | None:
        """Current number of lines, or None when unknown (no repo view)."""
        f = self._files.get(path)
        if f is not None:
            return f.num_lines()
        if self._view is None:
            return None
        index = self._view.line_index(path)
        return index.num_lines if index is not None else 0

    def to_base(self, path: str, start: int, end: int) -> list[tuple[int, int]]:
        """Current lines ``start..end`` (1-based, inclusive) -> merged base line ranges.

        Lines the agent wrote map to nothing; a range past the current end is cut.
        Files never edited map to themselves without loading their text.
        """
        if end < start:
            return []
        f = self._files.get(path)
        if f is None or not f.edited:
            return [(start, end)]
        out: list[tuple[int, int]] = []
        for b in f.ids(start - 1, end - start + 1):
            if b is None:
                continue
            if out and out[-1][1] + 1 == b:
                out[-1] = (out[-1][0], b)
            else:
                out.append((b, b))
        return merge_ranges(out)

    # ------------------------------------------------------------------ edits
    def revert(self, path: str) -> None:
        """The file is back at the base commit (``git checkout -- f``): every
        current line is its base line again, and it has no edits to report."""
        self._files.pop(path, None)
        self._patch_cache.pop(path, None)

    def stash(self) -> None:
        """``git stash``: every file is back at the base commit; the edits are saved."""
        self._stashes.append(self._files)
        self._files = {}
        self._patch_cache.clear()

    def unstash(self, keep: bool = False) -> None:
        """``git stash pop`` (``keep``: ``apply``): the saved edits are back. A file
        edited since the stash keeps the newer state only if the stash did not hold it."""
        if not self._stashes:
            return
        saved = self._stashes[-1] if keep else self._stashes.pop()
        if keep:
            saved = copy.deepcopy(saved)
        self._files = {**self._files, **saved}
        self._patch_cache.clear()

    def apply(self, path: str, edit: Edit) -> bool:
        """Replay one edit; False (and ``last_problem``) when it could not be located."""
        self.last_problem = None
        self._patch_cache.pop(path, None)
        f = self._file(path)
        if edit.content is not None:
            return self._write(f, edit.content)
        if edit.old is not None:
            if self._replace(f, edit):
                return True
            if edit.hunks:
                return self._hunks(f, path, edit.hunks)
            return self._fail(path, "the text to replace was not found in the current file")
        if edit.hunks:
            return self._hunks(f, path, edit.hunks)
        if edit.insert_line is not None and edit.new is not None:
            return self._insert(f, path, edit.insert_line, edit.new)
        f.uncertain = True
        f.edited = True
        return True

    def _placeholder(self) -> str:
        """A line whose text we do not know: unique, so no search or diff ever matches it."""
        self._placeholders += 1
        return f"\x00agent-written line {self._placeholders}\n"

    def _fail(self, path: str, why: str) -> bool:
        self.last_problem = (Reason.EDIT_NOT_LOCATED, f"{path}: {why}")
        return False

    def _write(self, f: _File, content: str) -> bool:
        new_lines = split_lines(content)
        if f.lines is None:   # unknown base: nothing to compare with
            f.lines = new_lines
            f.runs = _compress([None] * len(new_lines))
            f.uncertain = True
            f.changed()
            return True
        self._replace_lines(f, 0, len(f.lines), new_lines)
        return True

    def _replace_lines(self, f: _File, start: int, count: int, new_lines: list[str]) -> None:
        """Current lines ``start .. start+count-1`` (0-based) become ``new_lines``."""
        assert f.lines is not None
        old_lines = f.lines[start:start + count]
        new_ids = _block_ids(old_lines, f.ids(start, count), new_lines)
        f.lines[start:start + count] = new_lines
        f.splice(start, count, new_ids)

    def _replace(self, f: _File, edit: Edit) -> bool:
        """Text replacement: first occurrence (nearest the hunks, if any) or all of them."""
        old, new = edit.old or "", edit.new or ""
        if f.lines is None:
            return False
        text = f.text()
        if not old:
            if text:
                return False
            self._replace_lines(f, 0, 0, split_lines(new))
            return True
        every = edit.replace_all
        hits = _occurrences(text, old, None if every else (64 if edit.hunks else 1))
        if not hits:
            return False
        if not every:
            hits = [_nearest(f, hits, edit.hunks) if edit.hunks else hits[0]]
        for i in reversed(hits):   # bottom-up: earlier offsets stay valid
            self._replace_at(f, i, i + len(old), new)
        return True

    def _replace_at(self, f: _File, i: int, j: int, new: str) -> None:
        text = f.text()
        la = f.line_at(i)
        lb = f.line_at(j - 1) if j > i else la
        offsets = f.offsets()
        a, b = offsets[la], offsets[lb + 1]
        block = text[a:i] + new + text[j:b]
        self._replace_lines(f, la, lb - la + 1, split_lines(block))

    def _insert(self, f: _File, path: str, after: int, new: str) -> bool:
        """``insert_line`` semantics: the new text goes after current line ``after`` (0 = top)."""
        n = f.num_lines()
        if after < 0 or (n is not None and after > n):
            return self._fail(path, f"insert after line {after} but the file has {n} lines")
        new_lines = split_lines(new)
        if new_lines and not new_lines[-1].endswith("\n"):
            new_lines[-1] += "\n"
        if f.lines is not None:   # unknown text: only the mapping shifts
            if after == n and n and not f.lines[-1].endswith("\n"):
                f.lines[-1] += "\n"
            f.lines[after:after] = new_lines
        f.splice(after, 0, [None] * len(new_lines))
        return True

    def _hunks(self, f: _File, path: str, hunks) -> bool:
        """Structured diff hunks, unified-diff convention, numbers trusted as given.

        Without the hunk text the new lines are agent-written placeholders; applied
        bottom-up so each hunk's old numbers still hold when it is applied.
        """
        n = f.num_lines()
        for old_start, old_lines, _new_start, new_lines in sorted(hunks, reverse=True):
            start = old_start - 1 if old_lines > 0 else old_start  # 0-based first old line
            if start < 0 or old_lines < 0 or new_lines < 0 or (
                    n is not None and start + old_lines > n):
                return self._fail(path, f"hunk -{old_start},{old_lines} is outside the file")
            if f.lines is not None:
                f.lines[start:start + old_lines] = [self._placeholder() for _ in range(new_lines)]
            f.splice(start, old_lines, [None] * new_lines)
        return True

    # ------------------------------------------------------------------ EditLoc inputs
    def deleted_base_lines(self) -> dict[str, list[int]]:
        """Base lines no current line maps to, per edited file (for provisional EditLoc)."""
        out: dict[str, list[int]] = {}
        for path, f in self._files.items():
            if not f.edited or f.base is None:
                continue
            kept = set()
            for length, base in f.runs:
                if base is not None:
                    kept.update(range(base, base + length))
            gone = [k for k in range(1, len(f.base) + 1) if k not in kept]
            if gone:
                out[path] = gone
        return out

    def provisional_patch(self) -> str:
        """Unified diff base -> current of the edited files (``--- a/p`` / ``+++ b/p``).

        Built from the line mapping itself, with no context lines (like ``git diff
        -U0``): its deleted lines are exactly ``deleted_base_lines()`` and its cost is
        the runs plus the changed lines, not a diff of whole files. ``editloc``
        reads it as any patch; ``git apply --unidiff-zero`` applies it.
        """
        parts = []
        for path in sorted(self._files):
            f = self._files[path]
            if not f.edited or f.base is None or f.lines is None:
                continue
            cached = self._patch_cache.get(path)
            if cached is None:
                cached = _patch_from_runs(path, f)
                self._patch_cache[path] = cached
            parts.append(cached)
        return "".join(parts)


def _nl(line: str) -> str:
    """A diff body line; a last line without newline gets git's marker after it."""
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


def _patch_from_runs(path: str, f: _File) -> str:
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


def _occurrences(text: str, old: str, limit: int | None) -> list[int]:
    """Offsets of non-overlapping occurrences of ``old`` (at most ``limit``)."""
    hits: list[int] = []
    i = text.find(old)
    while i >= 0 and (limit is None or len(hits) < limit):
        hits.append(i)
        i = text.find(old, i + len(old))
    return hits


def _nearest(f: _File, hits: list[int], hunks) -> int:
    """The occurrence whose first line is nearest the first hunk's old start."""
    target = min(h[0] for h in hunks) - 1
    return min(hits, key=lambda i: abs(f.line_at(i) - target))
