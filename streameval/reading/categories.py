"""Tool-call categories by rules, no model (docs/metrics.md §7).

Every tool call gets exactly one of ``model.CATEGORIES``. Native tools are named by
their tool (``tools.TOOLS``, the one table of tool names); shell commands by the
programs they run (``shell.analyze`` asks ``shell.programs.command_category``, the one
table of programs, once per simple command and keeps the most significant, and the
reader hands that category to ``categorize``: this module never parses a command).

Significance, most first: edit > test > build > quality > env > git > run > read >
search > other. Why this order: a command that changes the repo is an edit whatever
else it does (``sed -i ... && pytest`` is where the agent acted); running tests is the
next strongest signal of intent and cost, then building, then linting/formatting
(quality), then dependency/environment work (``env`` = "env/deps"), then version
control. ``run`` (a script of the agent's own) outranks plain reading, and reading a
file outranks searching for one; ``cd``/``echo``/``sleep`` add nothing (other).

A command the shell parser rejects still gets a category from all the programs a plain
scan of its text finds (``shell.scan``: command positions after ``&&``,
``;``, ``|``, newlines or a literal ``\\n``, inside ``bash -lc '...'``, heredoc bodies
skipped), with the same significance order; ``cat >f`` there writes f (edit for a repo
file, other for a scratch file), it reads nothing. ``git checkout -- f`` and ``git
restore f`` stay ``git``: they undo edits, the agent makes none.
"""

from __future__ import annotations

import posixpath

from streameval.model import CATEGORIES, ToolCall
from streameval.reading.editor import editor_category
from streameval.tools import category_of, kind_of

__all__ = ["categorize", "most_significant", "is_context_file", "SIGNIFICANCE"]

#: most significant first (see the module docstring for why)
SIGNIFICANCE: tuple[str, ...] = (
    "edit", "test", "build", "quality", "env", "git", "run", "read", "search", "other",
)
_RANK = {c: i for i, c in enumerate(SIGNIFICANCE)}
assert set(SIGNIFICANCE) == set(CATEGORIES)


def most_significant(cats: list[str]) -> str:
    """The category of a compound command: the most significant of its parts."""
    return min(cats, key=lambda c: _RANK.get(c, len(_RANK)), default="other")


def categorize(call: ToolCall, shell_category: str | None = None) -> str:
    """Category of one tool call (one of ``model.CATEGORIES``).

    A shell call's category is that of its command (``shell_category``, from the shell
    analysis the reader already made); without one it is ``other``. An editor's is its
    sub-command's (``view`` reads, the rest edit); any other tool's is its name's
    (``tools.TOOLS``), ``other`` for a tool no table knows (MCP tools included).
    """
    tool = call.tool or ""
    kind = kind_of(tool, call.input if isinstance(call.input, dict) else {})
    if kind == "editor":
        return editor_category(call)
    if kind == "shell" or shell_category is not None:
        return shell_category if shell_category in CATEGORIES else "other"
    return category_of(tool) or "other"


# --------------------------------------------------------------------------- context files

_CONTEXT_NAMES = {"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules",
                  ".windsurfrules", ".clinerules", "CONVENTIONS.md", "AGENT.md"}


def is_context_file(path: str) -> bool:
    """True for agent instruction files (AGENTS.md, CLAUDE.md, .cursor/rules/*, ...).

    File names are matched case-sensitively, as the agents themselves look them up.
    """
    p = path.strip().strip("'\"").replace("\\", "/")
    if not p:
        return False
    base = posixpath.basename(p.rstrip("/"))
    if base in _CONTEXT_NAMES:
        return True
    parts = p.split("/")
    if ".cursor" in parts:   # a file under .cursor/rules/
        i = parts.index(".cursor")
        if len(parts) > i + 2 and parts[i + 1] == "rules":
            return True
    if ".clinerules" in parts[:-1]:
        return True
    return p.endswith(".github/copilot-instructions.md")
