"""A shell command line -> what it showed the agent and what it changed (docs/metrics.md §6).

Agents read code through ``cat``, ``sed -n``, ``grep``... inside a shell tool, so the
command text and its output are the only record of what they looked at. The command is
parsed with tree-sitter-bash (``syntax``) and a small, known set of programs is
interpreted (``readers``, ``search``, ``writers``, ``git``); nothing is ever executed.
``programs`` is the one table of the programs streameval knows: each with its category
and, where it reads or writes files, its handler.
What the output shows wins over what was asked: each file's share of the output
(``attribute``) is kept as the text the reading layer aligns with the base commit.

A command we cannot interpret is categorized but never guessed into a read; the reason
goes to ``ShellAnalysis.unparsed``. Line numbers are those of the file as it is when the
command runs (current numbers); mapping them back to the base commit is ``reading``'s job.
"""

from streameval.reading.shell.context import WHOLE_TREE, Seg, ShellAnalysis
from streameval.reading.shell.run import analyze, settle
from streameval.reading.shell.segment import Lookup, Printout

__all__ = ["WHOLE_TREE", "Lookup", "Printout", "Seg", "ShellAnalysis", "analyze", "settle"]
