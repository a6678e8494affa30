"""Order-aware file localisation (docs/metrics.md §7b): how early a run found the gold files.

Coverage says *whether* the gold files were read; a reviewer choosing between two agents
also wants to know *how soon*. The run's files are ranked in the order its steps first
showed them (a file shown again keeps its first place; the files of one step keep the
order the step gives them), and the ranked list is scored against the gold files with
the retrieval measures CodeContextBench reports for agents (Recall@k, Precision@k, MRR,
nDCG@10), plus the step, trace seconds and tokens at which the first gold file, and the
last missing one, were first shown.

Everything is kept incrementally: a step costs the number of its files, and the numbers
need only the first ten ranks and two milestones, so a scrape reads them in O(1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["K_VALUES", "NDCG_K", "FileRanking", "Milestone", "ndcg_at", "precision_at",
           "recall_at", "reciprocal_rank"]

#: the cut-offs of Recall@k and Precision@k, as CodeContextBench reports them
K_VALUES: tuple[int, ...] = (1, 3, 5, 10)
#: the cut-off of nDCG
NDCG_K = 10


# --------------------------------------------------------------------------- the measures


def recall_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    """Share of the gold files among the first ``k`` ranked; 1.0 when there is no gold
    file (nothing to find), else 0.0 when nothing was ranked."""
    if not gold:
        return 1.0
    return sum(1 for f in ranked[:k] if f in gold) / len(gold)


def precision_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    """Gold files among the first ``k`` ranked, over ``k`` (not over the files ranked:
    a run that read fewer than ``k`` files is not rewarded for stopping); 0.0 for
    ``k <= 0``."""
    if k <= 0:
        return 0.0
    return sum(1 for f in ranked[:k] if f in gold) / k


def reciprocal_rank(ranked: Sequence[str], gold: frozenset[str]) -> float:
    """1 / the rank (from 1) of the first gold file; 0.0 when none was ranked."""
    for rank, f in enumerate(ranked, start=1):
        if f in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], gold: frozenset[str], k: int = NDCG_K) -> float:
    """Normalised discounted cumulative gain at ``k`` with binary relevance.

    A gold file at rank r (from 1) among the first ``k`` gains 1 / log2(r + 1); the sum
    is divided by the best possible one, min(k, |gold|) gold files at the top. 0.0 for
    ``k <= 0`` or no gold file.
    """
    if k <= 0 or not gold:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r, f in enumerate(ranked[:k], start=1) if f in gold)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


# --------------------------------------------------------------------------- the tracker


@dataclass(frozen=True, slots=True)
class Milestone:
    """When something was first shown: the step (from 1), trace seconds since the run
    began, and the tokens the trace had reported by then (None: not known then)."""

    step: int
    seconds: float | None
    tokens: int | None


class FileRanking:
    """The files a run was shown, in the order first shown, scored against gold files."""

    __slots__ = ("gold", "_seen", "_top", "_count", "_first_rank", "_found", "first_gold",
                 "all_gold")

    def __init__(self, gold_files: Iterable[str]):
        self.gold = frozenset(gold_files)
        self._seen: set[str] = set()
        self._top: list[str] = []          # the first NDCG_K (>= max K) ranked files
        self._count = 0
        self._first_rank: int | None = None
        self._found: set[str] = set()
        #: the step that first showed a gold file, and the one that showed the last missing
        self.first_gold: Milestone | None = None
        self.all_gold: Milestone | None = None

    def shown_all(self, files: Iterable[str]) -> bool:
        """Whether every one of ``files`` was shown before: ``add`` would rank none."""
        return self._seen.issuperset(files)

    def add(self, files: Iterable[str], step: int, seconds: float | None,
            tokens: int | None) -> None:
        """Rank the files step ``step`` showed that no earlier step showed."""
        for f in files:
            if f in self._seen:
                continue
            self._seen.add(f)
            self._count += 1
            if len(self._top) < max(NDCG_K, *K_VALUES):
                self._top.append(f)
            if f in self.gold:
                self._found.add(f)
                if self._first_rank is None:
                    self._first_rank = self._count
                    self.first_gold = Milestone(step, seconds, tokens)
                if self.all_gold is None and len(self._found) == len(self.gold):
                    self.all_gold = Milestone(step, seconds, tokens)

    def compact(self) -> None:
        """Keep what ``numbers`` reads (a finished run's): the files seen go; no file
        may be added after."""
        self._seen = self._found = None  # type: ignore[assignment]
        self._top = tuple(self._top)  # type: ignore[assignment]

    def numbers(self) -> dict[str, Any]:
        """The record's ``localisation`` block (docs/metrics.md §7b), keys in that order."""
        top, gold = self._top, self.gold
        first = self.first_gold
        full = self.all_gold
        return {
            "files_ranked": self._count,
            "gold_files": len(gold),
            "recall_at": {str(k): recall_at(top, gold, k) for k in K_VALUES},
            "precision_at": {str(k): precision_at(top, gold, k) for k in K_VALUES},
            # the first rank is kept beyond the top ten: MRR looks at the whole list
            "mrr": 1.0 / self._first_rank if self._first_rank else 0.0,
            f"ndcg_at_{NDCG_K}": ndcg_at(top, gold, NDCG_K),
            "first_gold_file_tokens": first.tokens if first else None,
            "full_file_coverage_step": full.step if full else None,
            "full_file_coverage_seconds": full.seconds if full else None,
            "full_file_coverage_tokens": full.tokens if full else None,
        }
