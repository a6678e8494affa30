"""The agent's edits, replayed on the base text, and current -> base-commit line mapping.

docs/metrics.md §6 ("Edits"): once the agent has edited a file, the line numbers it
is shown differ from the base commit's. Every later read must be placed through the
edits seen so far; this module keeps, per repo file, a ``LineMap`` (the current text
and which base line each current line is).

Two sources move the map: the edits the trace records, replayed here, and what later
reads show (``observe``): a script that edited a file invisibly is found when the next
read shows the file's text elsewhere than the map expected, and the map follows.

Line identity rules (what "the agent wrote" means):

- a replaced block keeps the base identity of the lines it did not change: old and new
  blocks are compared line by line (``difflib``), so the context lines agents put in
  ``old_string``/``new_string`` stay base lines; changed lines become agent-written,
  even when only one character changed (they no longer show the base line);
- ``Write``/``create`` of an existing file, and a ``sed -i`` program run on the current
  text (``reading.sed``), are compared with the current text the same way; a file not
  in the base starts empty, so all its lines are agent-written;
- an edit we cannot replay (a redirect, a script, Codex ``file_change`` without a diff,
  ``undo_edit``) leaves the mapping as it was and marks the file ``uncertain`` until a
  read shows what it became;
- structured hunks are trusted; their new lines are the hunk's text when given, else
  agent-written placeholders whose text we do not know.
"""

from __future__ import annotations

import copy
from enum import IntEnum
from typing import TYPE_CHECKING

from streameval.errors import Reason
from streameval.intervals import merge_ranges
from streameval.model import APPEND, Edit
from streameval.reading.linemap import (
    LineMap,
    block_ids,
    compress,
    decode_text,
    patch_of,
    split_lines,
)
from streameval.reading.observed import Seen, Window, rebuild
from streameval.reading.sed import run_sed
from streameval.sources.basetext import BaseText

if TYPE_CHECKING:
    from streameval.sources.repo import RepoView

__all__ = ["EditMap", "MapChange"]

#: length of the identity run used for files whose base text is unknown (no repo)
_UNBOUNDED = 1 << 40
#: reads that agreed with the map, kept per file until one disagrees (a bound, not a rule)
_MAX_AGREED = 32


class MapChange(IntEnum):
    """What a read did to the map. Ordered, so the strongest of several runs of lines
    is ``max`` of theirs."""

    NONE = 0
    #: the map moved to follow an edit already counted: a recorded edit we could not
    #: replay (a script, a redirect), or one found by an earlier read since the last
    #: recorded edit
    FOLLOWED = 1
    #: the read showed an edit the trace never recorded (counted once per file until
    #: the next recorded edit to it)
    FOUND = 2


class EditMap:
    """Replays the agent's edits per repo file; maps current lines to base lines.

    ``view`` supplies base bytes; without a view (``inspect`` with no repo) the base
    text is unknown: text edits cannot be located, numbered ones (hunks, insertions)
    still shift the identity mapping.
    """

    def __init__(self, view: RepoView | None = None):
        self._view = view
        self._files: dict[str, LineMap] = {}
        self._patch_cache: dict[str, str] = {}
        self._placeholders = 0
        #: (path, message) of the last failed ``apply``, for callers that report it
        self.last_problem: tuple[Reason, str] | None = None
        #: edited files saved by ``git stash``, newest last
        self._stashes: list[dict[str, LineMap]] = []
        #: windows reads showed that agreed with the map, per file (``_agree``)
        self._agreed: dict[str, list[Window | tuple[tuple[int, ...], tuple[str, ...]]]] = {}

    # ------------------------------------------------------------------ state
    def _file(self, path: str) -> LineMap:
        f = self._files.get(path)
        if f is None:
            f = self._load(path)
            self._files[path] = f
        return f

    def _load(self, path: str) -> LineMap:
        if self._view is None:
            return LineMap(base=None, lines=None, runs=[[_UNBOUNDED, 1]])
        data = self._view.read(path)
        base = split_lines(decode_text(data)) if data is not None else []
        runs = [[len(base), 1]] if base else []
        return LineMap(base=base, lines=list(base), runs=runs)

    def is_mapped(self, path: str) -> bool:
        """Does the map hold the file (edited, or loaded by an edit or a read that
        disagreed)? A file it does not hold is at its base lines, none of it loaded."""
        return path in self._files

    def is_edited(self, path: str) -> bool:
        """Has the map moved this file away from the base (its numbers are not base
        numbers)?"""
        f = self._files.get(path)
        return f is not None and f.edited

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
        return self._view.num_lines(path) or 0

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

    def reference(self, path: str) -> tuple[BaseText, list[int | None]] | None:
        """The file as the edits made it, for reads to be aligned with: an index of its
        current lines and the base line each one is (None: the agent's), or None while
        the map has not moved it from the base (align with the base text itself).

        Aligning with the current text, not the base, is what makes a line the agent
        wrote with a base line's text (``return None``, a re-created line) the agent's:
        a line is a base line only when it came through every edit as one
        (docs/metrics.md §6d), which only the map knows."""
        f = self._files.get(path)
        if f is None or not f.edited or f.lines is None:
            return None
        if f._ref is None:
            text = [ln[:-1] if ln.endswith("\n") else ln for ln in f.lines]
            f._ref = (BaseText.of_lines(text), f.ids(0, len(f.lines)))
        return f._ref

    def base_of(self, path: str, first: int, count: int) -> list[int | None]:
        """The base line of each current line ``first .. first+count-1`` (1-based), as
        the map has it: where a read's lines are expected in the base."""
        f = self._files.get(path)
        if f is None or not f.edited:
            return list(range(first, first + count))
        ids = f.ids(first - 1, count)
        return ids + [None] * (count - len(ids))

    # ------------------------------------------------------------------ reads correct it
    def observe(self, path: str, first: int, ids: list[int | None],
                texts: list[str] | None = None, whole: bool = False) -> MapChange:
        """A read showed current lines ``first .. first+len(ids)-1`` to be base lines
        ``ids`` (None: a line of the agent's). When the map said otherwise, the file was
        changed by something the trace did not record: the map is rebuilt from every
        read since the last recorded edit (``observed``). ``whole``: the read showed
        the whole file.
        """
        m = len(ids)
        if m == 0 or first < 1 or self._view is None:
            return MapChange.NONE
        texts = texts if texts is not None else [""] * m
        f = self._files.get(path)
        if f is None and not whole and ids == list(range(first, first + m)):
            self._agree(path, Window(first, ids, texts))
            return MapChange.NONE
        f = self._file(path)
        if f.lines is None or f.base is None:
            return MapChange.NONE
        n = len(f.lines)
        agrees = f.ids(first - 1, m) == ids and first - 1 + m <= n
        window = Window(first, ids, texts)
        if agrees and (not whole or first - 1 + m == n):
            if f.seen is not None:
                f.seen.add(window, whole)
            else:
                self._agree(path, window)
            return MapChange.NONE
        found = MapChange.NONE
        if f.seen is None:
            # the first disagreement since the last recorded edit: an edit the trace
            # never recorded, unless that recorded edit is one we could not replay
            found = MapChange.FOLLOWED if f.uncertain else MapChange.FOUND
            f.uncertain = False
            f.seen = Seen([list(r) for r in f.runs], list(f.lines))
            for old in self._agreed.pop(path, ()):
                for w in _windows(old):
                    f.seen.add(w, False)   # reads that agreed with the map are facts too
        f.seen.add(window, whole)
        new_ids, new_lines = rebuild(f.seen, f.base, self._placeholder)
        self._patch_cache.pop(path, None)
        f.lines = new_lines
        f.runs = compress(new_ids)
        f.changed()
        return found or MapChange.FOLLOWED

    def observe_numbered(self, path: str, numbers: list[int], ids: list[int | None],
                         texts: list[str]) -> MapChange:
        """``observe`` for printed numbers, which may have gaps (grep hits): each run of
        consecutive numbers is a window. An unedited file read where the map expects
        costs one remembered entry, however many runs (the common case)."""
        if path not in self._files and ids == numbers:
            self._agree(path, (tuple(numbers), tuple(texts)))
            return MapChange.NONE
        changed = MapChange.NONE
        i = 0
        while i < len(numbers):
            j = i + 1
            while j < len(numbers) and numbers[j] == numbers[j - 1] + 1:
                j += 1
            changed = max(changed, self.observe(path, numbers[i], ids[i:j], texts[i:j]))
            i = j
        return changed

    def _agree(self, path: str, seen: Window | tuple[tuple[int, ...], tuple[str, ...]]) -> None:
        """Remember a read that agreed with the map (the most recent few per file): it
        is a fact when a later read disagrees. Numbered reads of an unedited file are
        kept as printed (numbers, texts) and cut into windows only when needed."""
        kept = self._agreed.setdefault(path, [])
        kept.append(seen)
        if len(kept) > _MAX_AGREED:
            del kept[0]

    # ------------------------------------------------------------------ edits
    def snapshot(self, path: str) -> tuple[list[str], list[int | None]] | None:
        """The file's current lines and the base line of each (None when its text is
        not known), to compare with what a command made of it (``rediff``)."""
        f = self._file(path)
        if f.lines is None or f.uncertain:
            return None
        return list(f.lines), f.ids(0, len(f.lines))

    def rediff(self, path: str, lines: list[str], ids: list[int | None]) -> None:
        """The file as a command left it, compared with ``lines`` (with base lines
        ``ids``) as it was before: unchanged lines keep their identity, as after one
        edit, whatever steps the command took in between."""
        f = self._files.get(path)
        if f is None or f.lines is None or f.uncertain:
            return
        new = f.lines
        lo, hi = _equal_ends(lines, new)
        mid = block_ids(lines[lo:len(lines) - hi], ids[lo:len(ids) - hi],
                        new[lo:len(new) - hi])
        f.runs = compress(ids[:lo] + mid + ids[len(ids) - hi:])
        f.changed()
        self._patch_cache.pop(path, None)

    def revert(self, path: str) -> None:
        """The file is back at the base commit (``git checkout -- f``): every
        current line is its base line again, and it has no edits to report."""
        self._files.pop(path, None)
        self._patch_cache.pop(path, None)
        self._agreed.pop(path, None)

    def stash(self) -> None:
        """``git stash``: every file is back at the base commit; the edits are saved."""
        self._stashes.append(self._files)
        self._files = {}
        self._patch_cache.clear()
        self._agreed.clear()

    def unstash(self, keep: bool = False) -> None:
        """``git stash pop`` (``keep``: ``apply``): the saved edits are back. A file
        edited since the stash keeps the newer state only if the stash did not hold it."""
        if not self._stashes:
            return
        saved = self._stashes[-1] if keep else self._stashes.pop()
        if keep:
            saved = copy.deepcopy(saved)
        self._files = {**self._files, **saved}
        self._agreed.clear()
        self._patch_cache.clear()

    def apply(self, path: str, edit: Edit) -> bool:
        """Replay one edit; False (and ``last_problem``) when it could not be located."""
        self.last_problem = None
        self._patch_cache.pop(path, None)
        f = self._file(path)
        f.seen = None   # a recorded edit: reads before it are in another numbering
        self._agreed.pop(path, None)
        if edit.content is not None:
            return self._write(f, edit.content)
        if edit.sed is not None and f.lines is not None:
            new = run_sed(f.lines, edit.sed.scripts, edit.sed.quiet, edit.sed.extended,
                          dict(edit.sed.files))
            if new is not None:
                # a replacement holding `\n` made several lines of one: the file has them
                new = split_lines("".join(new))
                self._replace_lines(f, 0, len(f.lines), new)
                return True
        if edit.old is not None:
            if self._replace(f, edit):
                return True
            if edit.hunks:
                return self._hunks(f, path, edit.hunks, edit.hunk_text)
            return self._fail(path, "the text to replace was not found in the current file")
        if edit.hunks:
            return self._hunks(f, path, edit.hunks, edit.hunk_text)
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

    def _write(self, f: LineMap, content: str) -> bool:
        new_lines = split_lines(content)
        if f.lines is None:   # unknown base: nothing to compare with
            f.lines = new_lines
            f.runs = compress([None] * len(new_lines))
            f.uncertain = True
            f.changed()
            return True
        self._replace_lines(f, 0, len(f.lines), new_lines)
        return True

    def _replace_lines(self, f: LineMap, start: int, count: int, new_lines: list[str]) -> None:
        """Current lines ``start .. start+count-1`` (0-based) become ``new_lines``.

        Lines equal at both ends are kept as they are first, so a whole-file rewrite
        that changed three lines costs a diff of three lines, not of the file.
        """
        assert f.lines is not None
        old_lines = f.lines[start:start + count]
        lo, hi = _equal_ends(old_lines, new_lines)
        if lo == len(old_lines) == len(new_lines):
            return
        old_mid = old_lines[lo:len(old_lines) - hi]
        new_mid = new_lines[lo:len(new_lines) - hi]
        at = start + lo
        new_ids = block_ids(old_mid, f.ids(at, len(old_mid)), new_mid)
        f.lines[at:at + len(old_mid)] = new_mid
        f.splice(at, len(old_mid), new_ids)

    def _replace(self, f: LineMap, edit: Edit) -> bool:
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

    def _replace_at(self, f: LineMap, i: int, j: int, new: str) -> None:
        text = f.text()
        la = f.line_at(i)
        lb = f.line_at(j - 1) if j > i else la
        offsets = f.offsets()
        a, b = offsets[la], offsets[lb + 1]
        block = text[a:i] + new + text[j:b]
        self._replace_lines(f, la, lb - la + 1, split_lines(block))

    def _insert(self, f: LineMap, path: str, after: int, new: str) -> bool:
        """``insert_line`` semantics: the new text goes after current line ``after`` (0 = top,
        ``APPEND``: after the last line)."""
        n = f.num_lines()
        if after == APPEND:
            if n is None:
                f.uncertain = True   # no text known: where the end is, is not either
                f.edited = True
                return True
            after = n
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

    def _hunks(self, f: LineMap, path: str, hunks, texts=None) -> bool:
        """Structured diff hunks, unified-diff convention, numbers trusted as given.

        The new lines are the hunk's text when ``texts`` gives it, else agent-written
        placeholders; applied bottom-up so each hunk's old numbers still hold. A hunk
        claims its sizes: they never allocate more than the file and the text given.
        """
        n = f.num_lines()
        order = sorted(range(len(hunks)), key=lambda h: hunks[h], reverse=True)
        for h in order:
            old_start, old_lines, _new_start, new_lines = hunks[h]
            start = old_start - 1 if old_lines > 0 else old_start  # 0-based first old line
            text = texts[h] if texts is not None and h < len(texts) else None
            if start < 0 or old_lines < 0 or new_lines < 0 or (
                    n is not None and start + old_lines > n) or (
                    text is not None and len(text) != new_lines) or (
                    text is None and new_lines > max(n or 0, 1) * 4 + 10_000):
                return self._fail(path, f"hunk -{old_start},{old_lines} +{new_lines} "
                                        "does not fit the file")
            if f.lines is not None:
                f.lines[start:start + old_lines] = (
                    [t + "\n" for t in text] if text is not None
                    else [self._placeholder() for _ in range(new_lines)])
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
                cached = patch_of(path, f)
                self._patch_cache[path] = cached
            parts.append(cached)
        return "".join(parts)


def _occurrences(text: str, old: str, limit: int | None) -> list[int]:
    """Offsets of non-overlapping occurrences of ``old`` (at most ``limit``)."""
    hits: list[int] = []
    i = text.find(old)
    while i >= 0 and (limit is None or len(hits) < limit):
        hits.append(i)
        i = text.find(old, i + len(old))
    return hits


def _nearest(f: LineMap, hits: list[int], hunks) -> int:
    """The occurrence whose first line is nearest the first hunk's old start."""
    target = min(h[0] for h in hunks) - 1
    return min(hits, key=lambda i: abs(f.line_at(i) - target))


def _windows(seen: Window | tuple[tuple[int, ...], tuple[str, ...]]) -> list[Window]:
    """A remembered agreeing read as windows: printed numbers of an unedited file are
    their own base lines, one window per run of consecutive numbers."""
    if isinstance(seen, Window):
        return [seen]
    numbers, texts = seen
    out: list[Window] = []
    i = 0
    while i < len(numbers):
        j = i + 1
        while j < len(numbers) and numbers[j] == numbers[j - 1] + 1:
            j += 1
        out.append(Window(numbers[i], list(numbers[i:j]), list(texts[i:j])))
        i = j
    return out


def _equal_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many lines ``a`` and ``b`` share at their start, then at their end (not
    overlapping the start): only the middle needs a diff."""
    lo, top = 0, min(len(a), len(b))
    while lo < top and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < top - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    return lo, hi
