"""What every run of a process shares: gold, repositories, the symbol index, base texts
and the tool map, loaded once from the command's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.errors import StreamevalError, UsageError
from streameval.runs.goldsets import GoldSources, PatchGold
from streameval.sources.basetext import BaseTexts
from streameval.sources.gold import load_gold
from streameval.sources.outcomes import Outcomes, load_outcomes
from streameval.sources.patchrows import load_patch_rows
from streameval.sources.repocache import RepoCache
from streameval.sources.symbols import SymbolIndex, check_grammars
from streameval.traces.labels import LabelError, LabelRules

if TYPE_CHECKING:
    from streameval.reading.toolmap import ToolMap
    from streameval.sources.basetext import BaseTexts
    from streameval.sources.gold import GoldInstance, GoldSet
    from streameval.sources.repocache import RepoCache
    from streameval.sources.symbols import SymbolIndex


@dataclass(slots=True)
class Resources:
    """Gold, repos, the symbol index and base texts shared by every session of a process."""

    #: a gold file's rows, or (``--gold-from-patch``) those and reference patches
    gold: GoldSet | GoldSources | None
    repos: RepoCache | None
    symbols: SymbolIndex | None = None
    texts: BaseTexts | None = None
    tools: ToolMap | None = None  # --tool-map
    #: ``--label`` and ``--label-from-path``, laid over each run's meta.json labels
    labels: LabelRules = field(default_factory=LabelRules)
    #: ``--outcomes``: each run's verdict, laid over meta.json's (``sources.outcomes``)
    outcomes: Outcomes | None = None

    def lookup(self, instance_id: str | None) -> GoldInstance | None:
        return self.gold.get(instance_id) if (self.gold is not None and instance_id) else None


def load_resources(gold: str | None, repos: str | None, repo: str | None,
                   tool_map: str | None = None, grammars: str | None = None,
                   gold_from_patch: str | None = None, patch_context: int = 0,
                   labels: tuple[str, ...] = (), label_from_path: str | None = None,
                   outcomes: str | None = None) -> Resources:
    """Gold (``--gold``, ``--gold-from-patch`` with ``--patch-context``), repositories
    (``--repos``/``--repo``), a symbol index with its grammars (``--grammars``, default
    ``symbols.default_grammars``), the tool map (``--tool-map``) and the label rules
    (``--label``, ``--label-from-path``) and the outcomes (``--outcomes``), as every
    command loads them. No gold (``inspect``, a fleet without gold) is None.

    Every file or setting that cannot be used is a UsageError naming it (the command
    says it in one line and exits 2).
    """
    try:
        grammars = check_grammars(grammars)
        rules = LabelRules.from_options(labels, label_from_path)
    except (ValueError, LabelError) as exc:
        raise UsageError(str(exc)) from None
    for option, folder in (("--repos", repos), ("--repo", repo)):
        if folder is not None and not Path(folder).is_dir():
            raise UsageError(f"{option} {folder}: no such directory")
    repo_cache = RepoCache(repos, repo)
    try:
        tools = _tool_map(tool_map) if tool_map else None
        gold_set = load_gold(gold) if gold else None
        patches = _patch_gold(gold_from_patch, patch_context, repo_cache)
        verdicts = load_outcomes(outcomes) if outcomes else None
    except UsageError:
        raise
    except StreamevalError as exc:   # its message names the file
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {exc.filename or gold}: {exc.strerror or exc}") from None
    golds = gold_set if patches is None else GoldSources(gold_set, patches)
    return Resources(golds, repo_cache, SymbolIndex(grammars=grammars), BaseTexts(), tools,
                     rules, verdicts)


def _patch_gold(path: str | None, context: int, repos: RepoCache) -> PatchGold | None:
    """``--gold-from-patch``: the rows, made into gold per instance on first use."""
    if not path:
        return None
    if context < 0:
        raise UsageError(f"--patch-context {context}: a number of lines >= 0")
    rows, errors = load_patch_rows(path)
    return PatchGold(rows, errors, context, Path(path).name, repos)


def _tool_map(path: str) -> ToolMap:
    # here, not at the top: the map's readers pull in the whole shell reading, which
    # unified predictions (stated, never shown) do not need at all
    from streameval.reading.toolmap import load_tool_map

    return load_tool_map(path)
