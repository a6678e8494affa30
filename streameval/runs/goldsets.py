"""Where a run's gold comes from: a gold file's rows, reference patches, or both.

``--gold`` rows are the gold when they name the instance; ``--gold-from-patch`` fills in
for the instances they do not name (docs/metrics.md §1b). Either way a session gets a
``GoldInstance`` that says which it is (``gold_source`` in its record), so a batch that
mixes the two never passes one off as the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from streameval.errors import RepoError, StreamevalError
from streameval.scoring.patchgold import PatchGoldError, gold_from_patch
from streameval.sources.gold import GoldInstance
from streameval.sources.patchrows import PatchRow

if TYPE_CHECKING:
    from streameval.sources.gold import GoldSet
    from streameval.sources.repocache import RepoCache

__all__ = ["GoldSources", "PatchGold"]


class PatchGold:
    """Gold from reference patches, made per instance on first use (its repository is
    needed to bound widened runs at the end of a file) and kept."""

    def __init__(self, rows: dict[str, PatchRow], errors: list[tuple[str, str]],
                 context: int, source_file: str, repos: RepoCache | None = None):
        self.rows = rows
        self.errors = list(errors)
        self.context = context
        self.source_file = source_file
        self.repos = repos
        self._made: dict[str, GoldInstance | None] = {}

    def get(self, instance_id: str) -> GoldInstance | None:
        if instance_id not in self._made:
            self._made[instance_id] = self._make(instance_id)
        return self._made[instance_id]

    def _make(self, instance_id: str) -> GoldInstance | None:
        row = self.rows.get(instance_id)
        if row is None:
            return None
        try:
            return gold_from_patch(row.instance_id, row.patch, self.context, repo=row.repo,
                                   base_commit=row.base_commit,
                                   line_count=self._line_count(row),
                                   source_file=self.source_file)
        except PatchGoldError as exc:
            self.errors.append((instance_id, str(exc)))
            return None

    def _line_count(self, row: PatchRow):
        """``path -> lines`` of the row's base files; None without a repository (the
        run then fails on the same missing repository, with its own error)."""
        if self.repos is None or not self.context:
            return None
        try:
            view = self.repos.view_for(GoldInstance(row.instance_id, repo=row.repo,
                                                    base_commit=row.base_commit))
        except (RepoError, StreamevalError):
            return None

        def count(path: str) -> int | None:
            index = view.line_index(path)
            return index.num_lines if index is not None else None

        return count

    def error_for(self, instance_id: str) -> str | None:
        self.get(instance_id)
        return next((m for iid, m in self.errors if iid == instance_id), None)

    def __contains__(self, instance_id: object) -> bool:
        return isinstance(instance_id, str) and instance_id in self.rows

    def __len__(self) -> int:
        return len(self.rows)


class GoldSources:
    """A gold file's rows first, then reference patches: what ``Resources.gold`` holds."""

    def __init__(self, dataset: GoldSet | None, patches: PatchGold | None):
        self.dataset = dataset
        self.patches = patches

    def get(self, instance_id: str) -> GoldInstance | None:
        found = self.dataset.get(instance_id) if self.dataset is not None else None
        if found is None and self.patches is not None:
            found = self.patches.get(instance_id)
        return found

    def error_for(self, instance_id: str) -> str | None:
        """Why the instance has no gold although a source names it (BAD_GOLD)."""
        if self.dataset is not None:
            bad = self.dataset.error_for(instance_id)
            if bad:
                return bad
        return self.patches.error_for(instance_id) if self.patches is not None else None

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [*(self.dataset.errors if self.dataset is not None else ()),
                *(self.patches.errors if self.patches is not None else ())]

    def __contains__(self, instance_id: object) -> bool:
        return self.get(instance_id) is not None if isinstance(instance_id, str) else False

    def __iter__(self) -> Iterator[GoldInstance]:
        return iter(self.dataset) if self.dataset is not None else iter(())

    def __len__(self) -> int:
        return (len(self.dataset) if self.dataset is not None else 0) + (
            len(self.patches) if self.patches is not None else 0)
