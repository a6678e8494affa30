"""A grep pattern as a Python regex: which lines a grep could have printed.

Splitting an output between printers (``segment``) needs to know which lines a ``grep``
prints: those its pattern matches (or does not, with ``-v``). GNU grep's basic (BRE) and
extended (ERE) syntaxes are translated to Python's (``reading.posix_regex``); a
pattern using what is not translated (back-references, ``-P`` constructs Python lacks, a
pattern file) gives None, and the split goes without it. Nothing is run: the regex is only matched against
the text of lines the output already holds, or of the file as the map has it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from streameval.reading.posix_regex import to_python

__all__ = ["grep_matcher"]


def grep_matcher(patterns: list[str], extended: bool = False, fixed: bool = False,
                 icase: bool = False, word: bool = False, whole_line: bool = False,
                 invert: bool = False) -> Callable[[str], bool] | None:
    """Does grep with these patterns print a line with this text? None when a pattern is
    not one this module translates."""
    if not patterns:
        return None
    parts: list[str] = []
    try:
        for p in patterns:
            for alt in p.split("\n"):
                body = re.escape(alt) if fixed else to_python(alt, extended)
                if word:
                    body = rf"(?<!\w)(?:{body})(?!\w)"
                if whole_line:
                    body = rf"^(?:{body})$"
                parts.append(f"(?:{body})")
        rx = re.compile("|".join(parts), re.I if icase else 0)
    except (ValueError, re.error, RecursionError):
        return None
    if invert:
        return lambda text: rx.search(text) is None
    return lambda text: rx.search(text) is not None
