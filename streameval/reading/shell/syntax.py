"""Shell text -> a small syntax of pipes, simple commands, words and redirections.

tree-sitter-bash builds the tree (pipes, lists, quotes, heredocs, redirections); this
module turns it into the few shapes the interpreter needs. Nothing is ever executed:
the parser only builds a syntax tree, and words keep whether they were static text
(no ``$var`` or ``$(...)``) and whether they hold an unquoted glob.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["Word", "Redirect", "Simple", "Group", "parse"]


@dataclass(slots=True)
class Word:
    text: str
    static: bool = True   # no $var / $(...) inside
    glob: bool = False    # unquoted * or ?


@dataclass(slots=True)
class Redirect:
    op: str
    fd: str | None
    target: Word | None


@dataclass(slots=True)
class Simple:
    argv: list[Word]
    redirects: list[Redirect] = field(default_factory=list)
    heredoc: str | None = None      # body text fed on stdin
    heredoc_exact: bool = True      # quoted delimiter or no expansions in the body
    #: the first stage of a pipe that runs only when the one before failed (``a || b``)
    or_else: bool = False


@dataclass(slots=True)
class Group:
    body: list[list[Any]]           # pipes
    redirects: list[Redirect] = field(default_factory=list)
    subshell: bool = False
    or_else: bool = False           # as ``Simple.or_else``


@lru_cache(maxsize=1)
def _parser() -> Any:
    """One tree-sitter parser, built on first use (keeps ``import streameval`` cheap)."""
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse(source: str) -> tuple[list[list[Any]], bool]:
    """(pipes, has_error): the command's pipes (a pipe is a list of stages), and whether
    the parser had to recover from a syntax error (then the pipes are not to be trusted)."""
    tree = _parser().parse(source.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    return _convert(root), root.has_error


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace")


_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
           "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "?": "?"}
#: a backslash and the character it escapes; a ``*`` or ``?`` no backslash escapes
_ESCAPED = re.compile(r"\\(.)")
_GLOB = re.compile(r"(?<!\\)[*?]")
_DYNAMIC = {"simple_expansion", "expansion", "command_substitution", "process_substitution",
            "arithmetic_expansion", "brace_expression"}


def word(node: Any) -> Word:
    """The value of one shell word, with quotes removed."""
    t = node.type
    raw = _text(node)
    if t == "command_name" and node.named_child_count == 1:
        return word(node.named_children[0])
    if t == "word":
        if "\\" not in raw:    # no escape: the word as written (the usual one)
            return Word(raw, glob="*" in raw or "?" in raw)
        return Word(_ESCAPED.sub(r"\1", raw.replace("\\\n", "")),
                    glob=_GLOB.search(raw) is not None)
    if t in ("number", "heredoc_start"):
        return Word(raw)
    if t == "raw_string":
        return Word(raw[1:-1])
    if t in ("string", "translated_string"):
        inner = raw[raw.index('"') + 1:-1] if '"' in raw else raw
        static = not any(c.type in _DYNAMIC for c in node.named_children)
        return Word(re.sub(r'\\([\\"$`])', r"\1", inner.replace("\\\n", "")), static=static)
    if t == "ansi_c_string":
        body = raw[2:-1]
        return Word(re.sub(r"\\(.)", lambda m: _ANSI_C.get(m.group(1), m.group(0)), body))
    if t == "concatenation":
        parts = [word(c) for c in node.named_children]
        return Word("".join(p.text for p in parts), all(p.static for p in parts),
                    any(p.glob for p in parts))
    return Word(raw, static=False)


_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
_COMPOUND = {"compound_statement", "for_statement", "c_style_for_statement", "while_statement",
             "if_statement", "elif_clause", "else_clause", "case_statement", "case_item",
             "do_group"}
_SKIP = {"function_definition", "comment", "test_command", "variable_assignment",
         "variable_assignments", "ERROR", "heredoc_body", "heredoc_start", "heredoc_end"}


def _convert(node: Any) -> list[list[Any]]:
    """tree-sitter node -> list of pipes (a pipe is a list of stages)."""
    t = node.type
    if t == "command":
        return [[_simple(node)]]
    if t == "pipeline":
        return _pipeline(node)
    if t == "list":
        return _list(node)
    if t in ("program", "negated_command"):
        return _children(node)
    if t == "redirected_statement":
        return _redirected(node)
    if t == "subshell":
        return [[Group(_children(node), subshell=True)]]
    if t in _COMPOUND:
        return [[Group(_children(node))]]
    if t == "declaration_command":
        words = [word(c) for c in node.children if c.type not in ("variable_assignment",)]
        return [[Simple(words[:1])]]
    return []


def _list(node: Any) -> list[list[Any]]:
    """``a && b``, ``a || b``, ``a; b``: the pipes in order, the right side of ``||``
    marked (it ran only if the left one failed)."""
    out: list[list[Any]] = []
    or_else = False
    for c in node.children:
        if not c.is_named:
            or_else = c.type == "||"
            continue
        if c.type in _SKIP:
            continue
        pipes = _convert(c)
        if or_else and pipes and pipes[0]:
            pipes[0][0].or_else = True
        or_else = False
        out.extend(pipes)
    return out


def _children(node: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    for c in node.named_children:
        if c.type not in _SKIP:
            out.extend(_convert(c))
    return out


def _simple(node: Any) -> Simple:
    st = Simple([])
    for c in node.named_children:
        if c.type in ("variable_assignment", "comment"):
            continue   # FOO=1 cmd: an environment prefix, not an argument
        if c.type == "file_redirect":
            st.redirects.append(_redirect(c))
        elif c.type == "herestring_redirect":
            st.heredoc = (word(c.named_children[0]).text + "\n") if c.named_child_count else ""
        elif c.type != "heredoc_redirect":
            st.argv.append(word(c))
    return st


def _pipeline(node: Any) -> list[list[Any]]:
    stages: list[Any] = []
    extra: list[list[Any]] = []
    for c in node.named_children:
        pipes = _convert(c)
        if pipes:
            stages.extend(pipes[0])
            extra.extend(pipes[1:])
    return ([stages] if stages else []) + extra


def _redirect(node: Any) -> Redirect:
    fd = op = None
    target = None
    for c in node.children:
        if c.type == "file_descriptor":
            fd = _text(c)
        elif not c.is_named:
            op = op or _text(c)
        elif target is None:
            target = word(c)
    return Redirect(op or ">", fd, target)


def _redirected(node: Any) -> list[list[Any]]:
    body = next((c for c in node.named_children if c.type not in _REDIRECTS), None)
    pipes = _convert(body) if body is not None else []
    if not pipes or not pipes[-1]:
        pipes.append([Simple([])])
    target = pipes[-1][-1]
    for c in node.named_children:
        if c.type == "file_redirect":
            target.redirects.append(_redirect(c))
        elif c.type == "herestring_redirect" and isinstance(target, Simple):
            target.heredoc = (word(c.named_children[0]).text + "\n") if c.named_child_count else ""
        elif c.type == "heredoc_redirect":
            _heredoc(c, target, pipes)
    return pipes


def _body(redirect: Any, body: Any) -> str:
    """A heredoc's text: tree-sitter starts the body node at its first non-blank
    character, so its leading blank lines and the first line's indentation are taken
    back from the redirect's text: the body starts after the newline that ends the line
    of the ``<<DELIM`` operator."""
    raw = redirect.text
    base = redirect.start_byte
    head = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    at = body.start_byte - base
    start = raw.find(b"\n", head.end_byte - base) + 1 if head is not None else 0
    if not 0 < start <= at:
        start = raw.rfind(b"\n", 0, at) + 1 if at > 0 else 0
    text = raw[start:body.end_byte - base].decode("utf-8", "replace")
    if any(_text(op) == "<<-" for op in redirect.children if not op.is_named):
        text = "\n".join(ln.lstrip("\t") for ln in text.split("\n"))   # <<- drops tabs
    return text


def _heredoc(node: Any, target: Any, pipes: list[list[Any]]) -> None:
    """Attach a heredoc body to its command; tree-sitter nests the rest of the line
    (``| tee f``, ``&& ls``, ``> f``) inside the heredoc node, so unfold it here."""
    after_op = False
    for c in node.children:
        if c.type == "heredoc_body" and isinstance(target, Simple):
            target.heredoc = _body(node, c)
            delim = next((_text(d) for d in node.children if d.type == "heredoc_start"), "")
            quoted = delim[:1] in ("'", '"') or "\\" in delim
            target.heredoc_exact = quoted or not re.search(r"[$`]", target.heredoc)
        elif c.type == "file_redirect":
            target.redirects.append(_redirect(c))
        elif c.type == "pipeline" and c.children and c.children[0].type in ("|", "|&"):
            rest = _children(c)
            if rest:
                pipes[-1].extend(rest[0])
                pipes.extend(rest[1:])
        elif c.type in ("&&", "||", ";"):
            after_op = True
        elif after_op and c.is_named and c.type not in _SKIP:
            pipes.extend(_convert(c))
