"""EditLoc: did the model patch edit the lines the gold says matter (docs/metrics.md §4).

The model patch's *deleted* lines, numbered in the old (base-commit) file, are compared
with the ``init_ctx`` lines of the gold. A pure function of two stored inputs, so replay
and live runs agree; the live session calls it again whenever the provisional patch
changes and once more when the final patch lands.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from streameval.intervals import merge_ranges
from streameval.reading.diffs import parse_diff
from streameval.sources.gold import GoldInstance, GoldSpan, normalize_gold_path

__all__ = ["deleted_lines", "editloc"]

def deleted_lines(patch: str) -> dict[str, list[int]]:
    """Deleted lines per file of a unified diff, in old-file line numbers.

    Every file that has at least one hunk is a key (an add-only file maps to ``[]``);
    lines are sorted and distinct. The file is named by ``+++ b/path``, or by
    ``--- a/path`` when the new side is ``/dev/null`` (a deleted file). ``diffs`` reads
    the patch (hunk counts decide where a hunk ends, headers with any white space).
    """
    found: dict[str, set[int]] = {}
    for fd in parse_diff(patch):
        if fd.path is None or not fd.hunks:
            continue
        nums = found.setdefault(fd.path, set())
        for hunk in fd.hunks:
            nums.update(hunk.deleted())
    return {path: sorted(nums) for path, nums in found.items()}


def editloc(patch: str | None, gold: GoldInstance) -> dict | None:
    """EditLoc of a model patch against ``gold.init_ctx`` (docs/metrics.md §4).

    None when there is no patch: unlike the public evaluator, streameval never scores
    the gold patch in place of a missing one. recall = precision = hits / deleted lines
    (0.0 when nothing was deleted, so an add-only patch scores 0).
    """
    if patch is None or not patch.strip():
        return None
    deleted: dict[str, set[int]] = {}
    for path, nums in deleted_lines(patch).items():
        deleted.setdefault(normalize_gold_path(path), set()).update(nums)
    gold_lines = _init_lines(gold.line_gold)
    hits = sum(_count_inside(nums, gold_lines.get(path, [])) for path, nums in deleted.items())
    pred_size = sum(len(nums) for nums in deleted.values())
    gold_size = sum(b - a + 1 for ranges in gold_lines.values() for a, b in ranges)
    score = hits / pred_size if pred_size else 0.0
    return {"recall": score, "precision": score, "intersection": hits,
            "gold_size": gold_size, "pred_size": pred_size}


def _init_lines(spans: Iterable[GoldSpan]) -> dict[str, list[tuple[int, int]]]:
    """Merged line ranges per file. A reversed range is read as [end, start]; ranges
    are kept only when both ends are > 0 (docs/metrics.md §3 "Lines", 4b), never clamped."""
    raw: dict[str, list[tuple[int, int]]] = {}
    for span in spans:
        a, b = sorted((span.start_line, span.end_line))
        if a > 0:
            raw.setdefault(span.file, []).append((a, b))
    return {path: merge_ranges(ranges) for path, ranges in raw.items()}


def _count_inside(nums: Iterable[int], ranges: list[tuple[int, int]]) -> int:
    starts = [a for a, _ in ranges]
    hits = 0
    for n in nums:
        i = bisect_right(starts, n) - 1
        if i >= 0 and n <= ranges[i][1]:
            hits += 1
    return hits
