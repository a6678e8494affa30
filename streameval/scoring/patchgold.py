"""Gold context from a reference patch (docs/metrics.md §1b), for tasks with no annotation.

All of SWE-bench has a reference patch and almost none of it has ContextBench gold. The
lines a reference patch changes are where the fix had to look, so they make a gold
context that is honest about what it is: the *edit location*, not everything a human
needed to read. ``--patch-context N`` widens each changed run by N lines on both sides.

The rule, for each file the patch changes that exists at the base commit:

- every base line the patch deletes or replaces is gold (old-file numbers);
- a run of added lines that replaces nothing marks the base line it follows (line 1
  for an insertion at the top of the file): the place the fix goes;
- each run is widened by ``context`` lines on both sides, from line 1 and, when the
  repository is at hand, to the file's last line;
- a file the patch creates has no base lines and is no gold; a patch that only creates
  files gives no gold at all, which is an error (``bad_gold``), never an empty gold
  that every run would cover fully.

Everything goes into ``init_ctx`` (so the line granularity and EditLoc use it too);
``add_ctx`` stays empty.
"""

from __future__ import annotations

from collections.abc import Callable

from streameval.intervals import merge_ranges
from streameval.reading.diffs import changed_runs, parse_diff
from streameval.sources.gold import GoldInstance, GoldSpan, normalize_gold_path

__all__ = ["PatchGoldError", "changed_base_lines", "gold_from_patch"]

#: ``(path) -> number of lines`` of a base file, or None when it cannot be told
LineCount = Callable[[str], "int | None"]


class PatchGoldError(ValueError):
    """The reference patch gives no gold; the message says why."""


def changed_base_lines(patch: str) -> dict[str, list[tuple[int, int]]]:
    """Base-commit line runs the patch changes, per base file (§1b), merged, in file
    order; files the patch creates are left out."""
    out: dict[str, list[tuple[int, int]]] = {}
    for fd in parse_diff(patch):
        if fd.old_path is None:          # created by the patch: nothing of it in the base
            continue
        path = normalize_gold_path(fd.old_path)
        for hunk in fd.hunks:
            for run in changed_runs(hunk):
                if run.old_count:
                    a, b = run.old_start, run.old_start + run.old_count - 1
                else:                    # an insertion after old_start (0: at the top)
                    a = b = max(1, run.old_start)
                out.setdefault(path, []).append((a, b))
    return {path: merge_ranges(ranges) for path, ranges in out.items() if ranges}


def gold_from_patch(instance_id: str, patch: str, context: int = 0, *,
                    repo: str | None = None, base_commit: str | None = None,
                    line_count: LineCount | None = None,
                    source_file: str | None = None) -> GoldInstance:
    """The gold of one instance from its reference patch (§1b). ``line_count`` bounds
    the widened runs at the end of their file when the repository is at hand.

    Raises PatchGoldError when the patch changes no base line.
    """
    changed = changed_base_lines(patch)
    if not changed:
        raise PatchGoldError("the reference patch changes no line of the base commit "
                             "(no hunk, or it only creates files)")
    spans: list[GoldSpan] = []
    for path, ranges in changed.items():
        last = line_count(path) if line_count is not None and context else None
        widened = [(max(1, a - context), b + context) for a, b in ranges]
        if last is not None:
            # a context line past the end of the file is no line of it (§3, "Lines")
            widened = [(a, max(a, min(b, last))) for a, b in widened]
        spans.extend(GoldSpan(path, a, b) for a, b in merge_ranges(widened))
    return GoldInstance(instance_id=instance_id, repo=repo, base_commit=base_commit,
                        init_ctx=spans, patch=patch, source="patch", source_file=source_file,
                        patch_context=context)

