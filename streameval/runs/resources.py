"""What every run of a process shares: gold, repositories, the symbol index, base texts
and the tool map, loaded once from the command's options."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.errors import StreamevalError, UsageError
from streameval.reading.toolmap import load_tool_map
from streameval.sources.basetext import BaseTexts
from streameval.sources.gold import load_gold
from streameval.sources.repocache import RepoCache
from streameval.sources.symbols import SymbolIndex, check_grammars

if TYPE_CHECKING:
    from streameval.reading.toolmap import ToolMap
    from streameval.sources.basetext import BaseTexts
    from streameval.sources.gold import GoldInstance, GoldSet
    from streameval.sources.repocache import RepoCache
    from streameval.sources.symbols import SymbolIndex


@dataclass(slots=True)
class Resources:
    """Gold, repos, the symbol index and base texts shared by every session of a process."""

    gold: GoldSet | None
    repos: RepoCache | None
    symbols: SymbolIndex | None = None
    texts: BaseTexts | None = None
    tools: ToolMap | None = None  # --tool-map

    def lookup(self, instance_id: str | None) -> GoldInstance | None:
        return self.gold.get(instance_id) if (self.gold is not None and instance_id) else None


def load_resources(gold: str | None, repos: str | None, repo: str | None,
                   tool_map: str | None = None, grammars: str | None = None) -> Resources:
    """Gold, repositories (``--repos``/``--repo``), a symbol index with its grammars
    (``--grammars``, default ``symbols.default_grammars``) and the tool map
    (``--tool-map``), as every command loads them. No gold (``inspect``) is None.

    Every file or setting that cannot be used is a UsageError naming it (the command
    says it in one line and exits 2).
    """
    try:
        grammars = check_grammars(grammars)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for option, folder in (("--repos", repos), ("--repo", repo)):
        if folder is not None and not Path(folder).is_dir():
            raise UsageError(f"{option} {folder}: no such directory")
    try:
        tools = load_tool_map(tool_map) if tool_map else None
        gold_set = load_gold(gold) if gold else None
    except UsageError:
        raise
    except StreamevalError as exc:   # its message names the file
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename or gold}: {exc.strerror or exc}") from None
    return Resources(gold_set, RepoCache(repos, repo), SymbolIndex(grammars=grammars),
                     BaseTexts(), tools)
