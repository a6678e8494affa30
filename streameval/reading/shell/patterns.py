"""A grep pattern as a Python regex: which lines a grep could have printed.

Splitting an output between printers (``segment``) needs to know which lines a ``grep``
prints: those its pattern matches (or does not, with ``-v``). GNU grep's basic (BRE) and
extended (ERE) syntaxes are translated to Python's; a pattern using what is not
translated here (back-references, ``-P`` constructs Python lacks, a pattern file) gives
None, and the split goes without it. Nothing is run: the regex is only matched against
the text of lines the output already holds, or of the file as the map has it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["grep_matcher"]

_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": r" \t\n\r\f\v", "blank": r" \t", "punct":
            r"!-/:-@\[-`{-~", "xdigit": "0-9A-Fa-f", "word": r"\w"}
#: characters special in a Python regex but literal in a BRE (their escaped form is special)
_BRE_LITERAL = set("(){}|+?")


def _bracket(p: str, i: int) -> tuple[str, int]:
    """A bracket expression from ``p[i] == '['``: (Python text, index after it)."""
    j = i + 1
    out = "["
    if j < len(p) and p[j] == "^":
        out += "^"
        j += 1
    if j < len(p) and p[j] == "]":
        out += r"\]"
        j += 1
    while j < len(p) and p[j] != "]":
        if p.startswith("[:", j):
            end = p.find(":]", j)
            name = p[j + 2:end] if end > 0 else ""
            if name not in _CLASSES:
                raise ValueError(name)
            out += _CLASSES[name]
            j = end + 2
            continue
        ch = p[j]
        out += "\\" + ch if ch in "\\[" else ch
        j += 1
    if j >= len(p):
        raise ValueError("unterminated bracket")
    return out + "]", j + 1


def _translate(p: str, extended: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == "[":
            text, i = _bracket(p, i)
            out.append(text)
            continue
        if ch == "\\" and i + 1 < len(p):
            nxt = p[i + 1]
            i += 2
            if nxt in "<>":
                out.append(r"\b")
            elif nxt.isdigit():
                raise ValueError("back-reference")
            elif not extended and nxt in _BRE_LITERAL:
                out.append(nxt)                  # \( \) \{ \} \| \+ \? are special
            elif nxt in "wWsSbB":
                out.append("\\" + nxt)
            else:
                out.append(re.escape(nxt))
            continue
        if not extended and ch in _BRE_LITERAL:
            out.append("\\" + ch)
        elif not extended and ch == "*" and (not out or out[-1] in ("^", "(")):
            out.append(r"\*")                    # a leading * is literal in a BRE
        else:
            out.append(ch)
        i += 1
    return "".join(out)


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
                body = re.escape(alt) if fixed else _translate(alt, extended)
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
