"""Each gold file of a run, line by line: the gold ranges, the base lines credited and at
which step, the lines the patch changed, and every gold range not credited with why.

The run page draws it as one strip per gold file; ``inspect`` prints the gold not
credited. Both read a ``RunJournal`` (what the calls were credited with) beside the
gold row, never the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streameval.intervals import IntervalSet, merge_ranges
from streameval.report.journal import FileTrail, RunJournal
from streameval.scoring.editloc import deleted_lines
from streameval.sources.gold import GoldInstance, GoldSpan, normalize_gold_path

__all__ = ["edited_lines", "gold_files", "uncredited"]


def _ranges(spans: Iterable[GoldSpan], path: str) -> list[tuple[int, int]]:
    """A file's gold ranges, merged; reversed ranges read as [end, start], and only
    positive lines (as the line granularity counts them, docs/metrics.md §3)."""
    out = []
    for s in spans:
        if s.file != path:
            continue
        a, b = sorted((s.start_line, s.end_line))
        if b > 0:
            out.append((max(a, 1), b))
    return merge_ranges(out)


def edited_lines(patch: str | None) -> dict[str, list[tuple[int, int]]]:
    """Base lines a patch deletes or changes, per repository path, as ranges: the
    lines EditLoc counts (docs/metrics.md §4)."""
    if not patch or not patch.strip():
        return {}
    out: dict[str, list[tuple[int, int]]] = {}
    for path, nums in deleted_lines(patch).items():
        out.setdefault(normalize_gold_path(path), []).extend((n, n) for n in nums)
    return {p: merge_ranges(r) for p, r in out.items()}


def _overlaps(ranges: Iterable[tuple[int, int]], a: int, b: int) -> bool:
    return any(x <= b and a <= y for x, y in ranges)


def _why(trail: FileTrail | None, a: int, b: int) -> str:
    """Why gold lines ``a..b`` of a file were not credited."""
    if trail is None or (trail.first_read_call is None and trail.listed_at is None):
        return "never shown: the file was not read"
    for w in trail.windows:
        if not w.current or _overlaps(w.current, a, b):
            return f"shown at call {w.call}, not credited: {w.why}"
    if trail.first_read_call is None:
        return f"never shown: the file was only listed (call {trail.listed_at})"
    return "never shown: the file was read, these lines were not"


def uncredited(gold_ranges: list[tuple[int, int]], trail: FileTrail | None) -> list[dict]:
    """The pieces of ``gold_ranges`` no step credited, each with the reason."""
    credited = trail.credited if trail is not None else IntervalSet()
    out = []
    for a, b in gold_ranges:
        gaps = IntervalSet([(a, b)])
        for x, y in credited:
            if x > b:
                break
            if y >= a:
                gaps = _minus(gaps, x, y)
        for x, y in gaps:
            out.append({"lines": [x, y], "why": _why(trail, x, y)})
    return out


def _minus(s: IntervalSet, x: int, y: int) -> IntervalSet:
    kept = []
    for a, b in s:
        if b < x or a > y:
            kept.append((a, b))
            continue
        if a < x:
            kept.append((a, x - 1))
        if b > y:
            kept.append((y + 1, b))
    return IntervalSet(kept)


def gold_files(gold: GoldInstance, journal: RunJournal | None,
               file_lines: Mapping[str, int | None],
               edits: Mapping[str, list[tuple[int, int]]]) -> list[dict[str, Any]]:
    """One entry per gold file, in the gold row's order (JSON-ready)."""
    order: list[str] = []
    for s in gold.gold_context:
        if s.file not in order:
            order.append(s.file)
    out = []
    trails = journal.files if journal is not None else {}   # read once (a finished run's is frozen)
    for path in order:
        init = _ranges(gold.init_ctx, path)
        add = _ranges(gold.add_ctx, path)
        trail = trails.get(path)
        read = sorted(trail.by_step) if trail is not None else []
        out.append({
            "file": path,
            "lines": file_lines.get(path),
            "init": [list(r) for r in init],
            "add": [list(r) for r in add],
            "read": [list(r) for r in read],
            "listed_at": trail.listed_at if trail is not None else None,
            "first_read_call": trail.first_read_call if trail is not None else None,
            "edited_at": list(trail.edited_at) if trail is not None else [],
            "edited": [list(r) for r in edits.get(path, [])],
            "uncredited": uncredited(merge_ranges(init + add), trail),
        })
    return out
