"""ContextBench gold context: loading and path normalizing.

INTERFACE STUB (owned by the core-access helper): the dataclasses are final; the
loaders are to be written.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class GoldSpan:
    """One gold item: a normalized repo path and a 1-based inclusive line range."""

    file: str
    start_line: int
    end_line: int


@dataclass(slots=True)
class GoldInstance:
    instance_id: str
    original_inst_id: str | None = None
    repo: str | None = None           # "owner/name" or a bare name, as the row gives it
    base_commit: str | None = None
    language: str | None = None
    init_ctx: list[GoldSpan] = field(default_factory=list)
    add_ctx: list[GoldSpan] = field(default_factory=list)
    patch: str | None = None          # the gold patch, informational only

    @property
    def gold_context(self) -> list[GoldSpan]:
        """init_ctx + add_ctx: the file, symbol and span granularities use both."""
        return self.init_ctx + self.add_ctx


def normalize_gold_path(path: str) -> str:
    """METRICS.md section 2, gold paths."""
    raise NotImplementedError
