"""A conservative shell tokenizer: words and operators, or a refusal.

Only what the read-only test needs: a command line is split into simple commands (their
words, with quotes removed, and their redirections) joined by ``&&``, ``||``, ``;``,
``|`` and newlines. Anything whose effect we would have to model is refused with a
reason instead of being tokenized: command substitution, process substitution,
here-documents, subshells and groups, background jobs, ANSI-C quoting. A refusal only
makes a call "not read-only" (so not checkable); it never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPERATORS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n")


class Refused(Exception):
    """The command uses shell syntax the read-only test does not follow."""


@dataclass
class Simple:
    """One simple command: its words and its redirections as (operator, target)."""

    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    #: the operator that joined it to the previous command ("" for the first)
    joined_by: str = ""


def split(command: str) -> list[Simple]:
    """The simple commands of ``command``, in order; raises ``Refused``."""
    tokens = _tokens(command)
    out: list[Simple] = []
    cur = Simple()
    pending_redirect: str | None = None
    joiner = ""
    for kind, value in tokens:
        if pending_redirect is not None:
            if kind != "word":
                raise Refused("redirection without a target")
            cur.redirects.append((pending_redirect, value))
            pending_redirect = None
            continue
        if kind == "word":
            cur.words.append(value)
        elif kind == "redir":
            pending_redirect = value
        else:   # an operator
            if value in ("&", ";;", "|&"):
                raise Refused(f"operator {value!r}")
            if cur.words or cur.redirects:
                cur.joined_by = joiner
                out.append(cur)
            elif value not in ("\n", ";"):
                raise Refused(f"empty command before {value!r}")
            cur = Simple()
            joiner = value
    if pending_redirect is not None:
        raise Refused("redirection without a target")
    if cur.words or cur.redirects:
        cur.joined_by = joiner
        out.append(cur)
    return out


def _tokens(s: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: ``word``, ``op`` or ``redir`` (the operator, with its fd)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in " \t":
            i += 1
            continue
        if c == "\\" and s[i + 1:i + 2] == "\n":
            i += 2
            continue
        if c == "#":
            while i < n and s[i] != "\n":
                i += 1
            continue
        op = next((o for o in OPERATORS if s.startswith(o, i)), None)
        if op is not None:
            out.append(("op", op))
            i += len(op)
            continue
        if c in "()":
            raise Refused("subshell")
        if c in "<>" or (c.isdigit() and _redir_after_digits(s, i)):
            j = i
            while j < n and s[j].isdigit():
                j += 1
            k = j
            if s.startswith("<<", k) or s.startswith("<(", k) or s.startswith(">(", k):
                raise Refused("here-document or process substitution")
            if s.startswith(">>", k) or s.startswith(">&", k) or s.startswith("<&", k):
                k += 2
            elif s.startswith("&>", i):
                k = i + 2
            else:
                k += 1
            out.append(("redir", s[i:k]))
            i = k
            continue
        if c == "&" and s.startswith("&>", i):
            out.append(("redir", "&>"))
            i += 2
            continue
        word, i = _word(s, i)
        out.append(("word", word))
    return out


def _redir_after_digits(s: str, i: int) -> bool:
    j = i
    while j < len(s) and s[j].isdigit():
        j += 1
    return j < len(s) and s[j] in "<>" and (i == 0 or s[i - 1] in " \t;|&\n")


def _word(s: str, i: int) -> tuple[str, int]:
    """One word from ``i``: quotes removed, escapes applied; refuses substitutions."""
    n = len(s)
    out: list[str] = []
    while i < n:
        c = s[i]
        if c in " \t\n;&|<>()":
            break
        if c == "`" or s.startswith("$(", i):
            raise Refused("command substitution")
        if s.startswith("$'", i):
            raise Refused("ANSI-C quoting")
        if c in "{}" and not out and (i + 1 >= n or s[i + 1] in " \t\n;"):
            raise Refused("group")
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise Refused("unterminated quote")
            out.append(s[i + 1:j])
            i = j + 1
        elif c == '"':
            i = _double_quoted(s, i + 1, out)
        elif c == "\\":
            out.append(s[i + 1:i + 2])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out), i


def _double_quoted(s: str, i: int, out: list[str]) -> int:
    """The inside of ``"..."`` from ``i`` (past the opening quote) onto ``out``."""
    n = len(s)
    while i < n and s[i] != '"':
        if s[i] == "`" or s.startswith("$(", i):
            raise Refused("command substitution")
        if s[i] == "\\" and i + 1 < n and s[i + 1] in '"\\$`\n':
            if s[i + 1] != "\n":
                out.append(s[i + 1])
            i += 2
            continue
        out.append(s[i])
        i += 1
    if i >= n:
        raise Refused("unterminated quote")
    return i + 1
