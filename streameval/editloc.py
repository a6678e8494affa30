"""EditLoc: did the model patch edit the lines the gold says matter (METRICS.md section 4).

The model patch's *deleted* lines, numbered in the old (base-commit) file, are compared
with the ``init_ctx`` lines of the gold. A pure function of two stored inputs, so replay
and live runs agree; the live session calls it again whenever the provisional patch
changes and once more when the final patch lands.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator

from streameval.gold import GoldInstance, GoldSpan, normalize_gold_path

__all__ = ["deleted_lines", "editloc"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def deleted_lines(patch: str) -> dict[str, list[int]]:
    """Deleted lines per file of a unified diff, in old-file line numbers.

    Every file that has at least one hunk is a key (an add-only file maps to ``[]``);
    lines are sorted and distinct. The file is named by ``+++ b/path``, or by
    ``--- a/path`` when the new side is ``/dev/null`` (a deleted file). Hunk line counts
    decide where a hunk ends, as ``git apply`` does, so a deleted line whose text begins
    with ``--`` is not mistaken for a file header. Anything that is not a diff line is
    skipped: agents' patches arrive with prose, CRLF endings and truncation.
    """
    found: dict[str, set[int]] = {}
    lines = _lines(patch)
    old_name: str | None = None
    current: str | None = None
    for line in lines:
        if line.startswith("diff --git "):
            old_name = current = None
        elif line.startswith("--- "):
            old_name, current = _header_path(line[4:], "a/"), None
        elif line.startswith("+++ "):
            new_name = _header_path(line[4:], "b/")
            current = old_name if new_name is None else new_name
        elif (m := _HUNK.match(line)) is not None:
            deleted = _walk_hunk(lines, int(m[1]), _count(m[2]), _count(m[4]))
            if current is not None:
                found.setdefault(current, set()).update(deleted)
    return {path: sorted(nums) for path, nums in found.items()}


def _lines(patch: str) -> _Lines:
    # split("\n"), not splitlines(): a form feed or U+2028 inside a source line must not
    # start a new diff line.
    return _Lines(line[:-1] if line.endswith("\r") else line for line in patch.split("\n"))


class _Lines:
    """An iterator over diff lines that a hunk walker can push one line back onto."""

    def __init__(self, lines: Iterable[str]):
        self._it = iter(lines)
        self._back: list[str] = []

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return self._back.pop() if self._back else next(self._it)

    def push_back(self, line: str) -> None:
        self._back.append(line)


def _count(text: str | None) -> int:
    return 1 if text is None else int(text)  # "@@ -5 +5 @@": a count of one


def _walk_hunk(lines: _Lines, old_line: int, old_left: int, new_left: int) -> list[int]:
    """Consume one hunk's body; return its deleted old-file line numbers.

    ' ' (or an empty line, from tools that strip trailing blanks) is context and advances
    the old line; '-' is deleted and advances it; '+' does not; '\\' ("No newline at end
    of file") is ignored. The hunk ends when its counts are used up or a line that cannot
    belong to a hunk appears (which is handed back to the header parser).
    """
    deleted: list[int] = []
    while old_left > 0 or new_left > 0:
        line = next(lines, None)
        if line is None:
            break
        tag = line[:1]
        if tag in (" ", ""):
            old_line, old_left, new_left = old_line + 1, old_left - 1, new_left - 1
        elif tag == "-":
            deleted.append(old_line)
            old_line, old_left = old_line + 1, old_left - 1
        elif tag == "+":
            new_left -= 1
        elif tag != "\\":
            lines.push_back(line)
            break
    return deleted


def _header_path(text: str, prefix: str) -> str | None:
    """The path of a ``---``/``+++`` header; None for ``/dev/null``.

    GNU diff appends a tab and a timestamp; git appends a tab to names with spaces and
    C-quotes names with unusual characters.
    """
    name = text.split("\t", 1)[0]
    if name.startswith('"'):
        name = _unquote(name)
    else:
        name = name.rstrip()
    if name == "/dev/null":
        return None
    if name.startswith(prefix):
        name = name[len(prefix):]
    return name


def _unquote(quoted: str) -> str:
    """Undo git's C-style quoting (``"a/caf\\303\\251.py"``); bytes decode as UTF-8."""
    body = quoted[1:-1] if len(quoted) > 1 and quoted.endswith('"') else quoted[1:]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out += ch.encode("utf-8")
            i += 1
        elif body[i + 1] in "01234567" and len(body) >= i + 4:
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
            i += 2
    return out.decode("utf-8", errors="replace")


def editloc(patch: str | None, gold: GoldInstance) -> dict | None:
    """EditLoc of a model patch against ``gold.init_ctx`` (METRICS.md section 4).

    None when there is no patch: unlike the public evaluator, streameval never scores
    the gold patch in place of a missing one. recall = precision = hits / deleted lines
    (0.0 when nothing was deleted, so an add-only patch scores 0).
    """
    if patch is None or not patch.strip():
        return None
    deleted: dict[str, set[int]] = {}
    for path, nums in deleted_lines(patch).items():
        deleted.setdefault(normalize_gold_path(path), set()).update(nums)
    gold_lines = _init_lines(gold.init_ctx)
    hits = sum(_count_inside(nums, gold_lines.get(path, [])) for path, nums in deleted.items())
    pred_size = sum(len(nums) for nums in deleted.values())
    gold_size = sum(b - a + 1 for ranges in gold_lines.values() for a, b in ranges)
    score = hits / pred_size if pred_size else 0.0
    return {"recall": score, "precision": score, "intersection": hits,
            "gold_size": gold_size, "pred_size": pred_size}


def _init_lines(spans: Iterable[GoldSpan]) -> dict[str, list[tuple[int, int]]]:
    """Merged line ranges per file. A reversed range is read as [end, start]; ranges
    are kept only when both ends are > 0 (METRICS.md 3 "Lines", 4b), never clamped."""
    raw: dict[str, list[tuple[int, int]]] = {}
    for span in spans:
        a, b = sorted((span.start_line, span.end_line))
        if a > 0:
            raw.setdefault(span.file, []).append((a, b))
    merged: dict[str, list[tuple[int, int]]] = {}
    for path, ranges in raw.items():
        out: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            if out and a <= out[-1][1] + 1:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        merged[path] = out
    return merged


def _count_inside(nums: Iterable[int], ranges: list[tuple[int, int]]) -> int:
    starts = [a for a, _ in ranges]
    hits = 0
    for n in nums:
        i = bisect_right(starts, n) - 1
        if i >= 0 and n <= ranges[i][1]:
            hits += 1
    return hits
