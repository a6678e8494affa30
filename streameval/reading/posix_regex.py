"""POSIX regular expressions (as grep and sed read them) in Python's ``re`` dialect.

One translation for both programs, so that a pattern means the same lines whether a grep
printed them or a sed address chose them. Basic (BRE) and extended (ERE) syntax, named
classes, ``\\<``/``\\>``; sed adds ``\\n``/``\\t`` and back-references. What is not translated
raises ``Unsupported``: the caller then treats the lines as unknown rather than guess.
"""

from __future__ import annotations

import re

__all__ = ["Unsupported", "to_python", "replacement_template"]

_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": r" \t\n\r\f\v", "blank": r" \t", "punct":
            r"!-/:-@\[-`{-~", "xdigit": "0-9A-Fa-f", "word": r"\w"}
#: characters special in a Python regex but literal in a BRE (their escaped form is special)
_BRE_LITERAL = set("(){}|+?")


class Unsupported(ValueError):
    """A construct not translated here: the lines it would choose are unknown."""


def to_python(expr: str, extended: bool, sed: bool = False) -> str:
    """``expr`` as a Python regex. ``sed``: sed's escapes (``\\n``, ``\\t``) and
    back-references, which a grep pattern joined with others cannot keep."""
    out: list[str] = []
    i = 0
    while i < len(expr):
        ch = expr[i]
        if _quantifier_at(expr, i, extended) and out and (
                out[-1] in _ASSERTIONS or out[-1] in _QUANTIFIERS or out[-1].endswith("}")):
            # a repeated assertion, or stacked quantifiers (Python reads a+? as lazy and
            # a*+ as possessive; POSIX as (a+)?): say unknown rather than guess
            raise Unsupported("a quantifier after an assertion or a quantifier")
        if ch == "[":
            text, i = _bracket(expr, i)
            out.append(text)
            continue
        if ch == "\\" and i + 1 < len(expr):
            out.append(_escaped(expr[i + 1], extended, sed))
            i += 2
            continue
        if not extended and ch in _BRE_LITERAL:
            out.append("\\" + ch)
        elif not extended and ch == "*" and (not out or out[-1] in ("^", "(", "|")):
            out.append(r"\*")                    # a leading * is literal in a BRE
        elif not extended and ch == "^" and out and out[-1] not in ("(", "|"):
            out.append(r"\^")                    # an anchor only where an expression starts
        elif not extended and ch == "$" and not expr.startswith(("\\)", "\\|"), i + 1) \
                and i + 1 < len(expr):
            out.append(r"\$")                    # ... and ends
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _escaped(nxt: str, extended: bool, sed: bool) -> str:
    """``\\`` then ``nxt``, in Python's dialect."""
    if nxt == "<":
        return r"\b(?=\w)"
    if nxt == ">":
        return r"\b(?<=\w)"
    if nxt.isdigit():
        if not sed:
            raise Unsupported("back-reference")
        return "\\" + nxt
    if not extended and nxt in _BRE_LITERAL:
        return nxt                          # \( \) \{ \} \| \+ \? are special
    if nxt in "wWsSbB" or (sed and nxt in "nt"):
        return "\\" + nxt
    return re.escape(nxt)


_ASSERTIONS = (r"\b(?=\w)", r"\b(?<=\w)", r"\b", r"\B")
_QUANTIFIERS = ("*", "+", "?")


def _quantifier_at(expr: str, i: int, extended: bool) -> bool:
    if extended:
        return expr[i] in "*+?{"
    return expr[i] == "*" or expr.startswith(("\\+", "\\?", "\\{"), i)


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
                raise Unsupported(f"class {name}")
            out += _CLASSES[name]
            j = end + 2
            continue
        ch = p[j]
        out += "\\" + ch if ch in "\\[" else ch
        j += 1
    if j >= len(p):
        raise Unsupported("unterminated bracket")
    return out + "]", j + 1


def replacement_template(repl: str) -> str:
    """sed's replacement (``&``, ``\\1``, ``\\n``) as a template for ``re.sub``."""
    out: list[str] = []
    i = 0
    while i < len(repl):
        ch = repl[i]
        if ch == "\\" and i + 1 < len(repl):
            nxt = repl[i + 1]
            if nxt.isdecimal():
                out.append(f"\\g<{nxt}>")
            elif nxt == "n":
                out.append("\n")
            elif nxt == "t":
                out.append("\t")
            elif nxt == "&":
                out.append("&")
            else:
                out.append(nxt.replace("\\", "\\\\"))
            i += 2
            continue
        if ch == "&":
            out.append("\\g<0>")
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
        i += 1
    return "".join(out)
