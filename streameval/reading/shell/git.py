"""``git`` inside a shell command: reverts, stashes, ``show REV:f``, ``grep``, ``apply``.

``git checkout -- f`` / ``git restore f`` (a file or a directory; ``git reset --hard`` is
the whole tree, ``:/``) put files back at HEAD, the base the agent started from: they are
reported as a bare ``Edit(f)`` plus a ``TreeOp("revert", f)``; ``git stash`` / ``stash
pop`` are ``TreeOp("push")`` / ``TreeOp("pop")``, in order with the command's edits. ``git show HEAD:f`` prints the base commit's text.
"""

from __future__ import annotations

import posixpath
import re

from streameval.model import Edit, TreeOp
from streameval.reading.output.listing import path_shape, paths_parser
from streameval.reading.shell import rules
from streameval.reading.shell.context import (
    EMPTY,
    WHOLE_TREE,
    Ctx,
    Program,
    Seg,
    Stream,
    path_of,
    split_opts,
)
from streameval.reading.shell.search import grep
from streameval.reading.shell.syntax import Simple, Word
from streameval.reading.shell.writers import apply_diff

__all__ = ["PROGRAMS", "git", "cd"]

_GIT_VALUES = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
_FILE_LIKE = re.compile(r"(^|/)[^/]*\.[A-Za-z][\w-]*$|^\./")
_CHECKOUT_VALUES = {"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"}
#: revisions that name the commit the agent started from
_BASE_REVS = ("", "HEAD", "@")


def cd(ctx: Ctx, target: Word | None) -> None:
    ctx.moved = True
    if target is None or not target.static or target.text in ("-", "~") \
            or target.text.startswith("~"):
        ctx.lost = True
        ctx.note("cd to a directory we cannot follow")
        return
    t = target.text
    if t.startswith("/"):
        ctx.prefix, ctx.lost = posixpath.normpath(t), False
    elif not ctx.lost:
        ctx.prefix = posixpath.normpath(posixpath.join(ctx.prefix or "", t))


def git(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    i = 1
    saved = (ctx.prefix, ctx.lost)
    while i < len(argv) and argv[i].text.startswith("-"):
        if argv[i].text == "-C" and i + 1 < len(argv):
            cd(ctx, argv[i + 1])
        i += 2 if argv[i].text in _GIT_VALUES else 1
    args = argv[i:]
    sub = args[0].text if args else ""
    try:
        if sub == "grep":
            return grep(ctx, [Word("git-grep")] + args[1:], st, stdin, "git-grep")
        if sub == "show":
            return _show(ctx, args)
        if sub in ("checkout", "restore"):
            _revert(ctx, sub, args)
        elif sub == "reset":
            _reset(ctx, args)
        elif sub == "stash":
            _stash(ctx, args)
        elif sub == "ls-files":
            return Stream(fmt=paths_parser(ctx.join), shape=path_shape)
        elif sub == "apply":
            flags, _, ops = split_opts(args, {"--directory", "--exclude", "--include"}, "pC")
            if not ("check" in flags or "--check" in flags or "--stat" in flags):
                return apply_diff(ctx, st, stdin, None, "git apply", ops)
        return EMPTY
    finally:
        ctx.prefix, ctx.lost = saved


def _revert(ctx: Ctx, sub: str, argv: list[Word]) -> None:
    """``git checkout [REV] [--] FILE...`` / ``git restore [--source=REV] FILE...``:
    files put back from a commit (a ``TreeOp("revert")`` when that is HEAD).

    Without ``--``, ``git checkout X`` is a branch switch unless X looks like a file
    (``a.py``, ``src/x.ts``, ``./f``): branch names rarely end in ``.ext``."""
    args = argv[1:]
    texts = [w.text for w in args]
    dash = texts.index("--") if "--" in texts else None
    head, tail = (args[:dash], args[dash + 1:]) if dash is not None else (args, [])
    flags = [w.text for w in head if w.text.startswith("-")]
    if sub == "checkout" and any(f in _CHECKOUT_VALUES or f.startswith("--orphan")
                                 for f in flags):
        return   # creates or switches a branch
    ops = [w for w in head if not w.text.startswith("-")]
    if sub == "restore":
        if _has_flag(flags, "S", "--staged") and not _has_flag(flags, "W", "--worktree"):
            return   # the index only: the file on disk is unchanged
        source = next((f.split("=", 1)[1] for f in flags if f.startswith("--source=")), None)
        for i, t in enumerate(texts[:len(head)]):
            if t in ("-s", "--source") and i + 1 < len(head):
                source = texts[i + 1]
                ops = [w for w in ops if w is not head[i + 1]]
        rev, paths = source, ops + tail
    elif dash is not None:
        rev, paths = (ops[0].text if ops else None), tail
    else:
        rev = ops[0].text if len(ops) > 1 and not _FILE_LIKE.search(ops[0].text) else None
        paths = [w for w in (ops[1:] if rev else ops) if _FILE_LIKE.search(w.text)
                 or w.text == "."]
    _revert_paths(ctx, paths, (rev or "") in _BASE_REVS, f"git {sub}")


def _reset(ctx: Ctx, argv: list[Word]) -> None:
    """``git reset --hard [HEAD]``: every file back as at HEAD (the base: agents work on
    an uncommitted tree). Other modes leave the work tree alone."""
    texts = [w.text for w in argv[1:]]
    if "--hard" not in texts:
        return
    revs = [t for t in texts if not t.startswith("-")]
    _revert_paths(ctx, [Word(WHOLE_TREE)], revs in ([], ["HEAD"], ["@"]), "git reset --hard")


def _stash(ctx: Ctx, argv: list[Word]) -> None:
    """``git stash [push|save] [-u]`` puts the whole work tree back at HEAD; ``git stash
    pop``/``apply`` brings the saved edits back. A stash of some paths is not followed."""
    words = [w.text for w in argv[1:]]
    verb = next((t for t in words if not t.startswith("-")), "push")
    if verb in ("push", "save"):
        rest = words[words.index(verb) + 1:] if verb in words else words
        if "--" in rest or any(not t.startswith("-") for t in rest[:1] if verb == "push"):
            ctx.note("git stash of some paths: not followed")
            return
        ctx.res.tree_op(TreeOp("push"))
    elif verb in ("pop", "apply"):
        ctx.res.tree_op(TreeOp(verb))


def _has_flag(flags: list[str], short: str, long: str) -> bool:
    return any(f == long or re.fullmatch(rf"-[a-zA-Z]*{short}[a-zA-Z]*", f) for f in flags)


def _revert_paths(ctx: Ctx, paths: list[Word], to_head: bool, what: str) -> None:
    """Each path, a file or a directory (``git checkout -- .``): the inference resets
    every edited file at or under it; ``:/`` is the whole tree."""
    for w in paths:
        p = WHOLE_TREE if w.text == WHOLE_TREE else path_of(ctx, w, f"{what} path")
        if p is None:
            continue
        if p != WHOLE_TREE and len(p) > 1:
            p = p.rstrip("/")
        ctx.res.edits.append(Edit(p))
        ctx.vcs_edits.append(ctx.res.edits[-1])
        if to_head:
            ctx.res.tree_op(TreeOp("revert", p))
        else:
            ctx.note(f"{what} from another commit: content unknown")


def _show(ctx: Ctx, argv: list[Word]) -> Stream:
    """``git show REV:path``: the file as it is at REV, which the agent's edits never
    move: its text is matched with the base directly (at HEAD it is the base text)."""
    segs = []
    for w in argv[1:]:
        if w.text.startswith("-") or not w.static:
            continue
        rev, colon, path = w.text.partition(":")
        if colon and path and "/" not in rev[:1]:
            # COMMIT:path is relative to the repo root unless written ./path
            p = ctx.join(path) if path.startswith("./") else path
            if p is None:
                continue
            segs.append(Seg(p, path, base=True))
    return Stream(segs=segs)


#: the programs this module reads, with their category (``shell.programs`` holds them all)
PROGRAMS = {"git": Program("git", git, rules.git)}
