"""Commands that change files: redirects, tee, sed -i, patches, and scripts that write.

Each becomes an ``Edit`` in the form the command gives: whole new text (``cat > f
<<EOF``), a ``sed -i`` program to run on the current text, the hunks of a patch, or a
bare edit whose text nobody recorded (``echo >> f``, ``python fix.py`` writing ``f``):
the next read of that file shows what it became.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from streameval.model import APPEND, Edit, SedScript
from streameval.reading.diffs import parse_diff
from streameval.reading.sed import files_read, parses
from streameval.reading.shell import rules
from streameval.reading.shell.context import (
    EMPTY,
    Ctx,
    Program,
    Seg,
    Stream,
    path_of,
    split_opts,
    val,
)
from streameval.reading.shell.python import script_files
from streameval.reading.shell.syntax import Redirect, Simple, Word

__all__ = ["PROGRAMS", "PYTHON", "apply_diff", "edit_files", "note_writes", "redirect_io",
           "run_python", "sed_in_place", "stdout_hidden", "writable"]

_WRITES = (">", ">>", ">|", "&>", "&>>")


def writable(p: str) -> bool:
    """Redirect/tee targets worth reporting as edits: not devices, temp dirs or logs."""
    return not (p.startswith(("/dev/", "/tmp/", "/proc/", "/var/tmp/")) or p.endswith(".log"))


def stdout_hidden(redirects: list[Redirect]) -> bool:
    return any(r.op in _WRITES and r.fd in (None, "1") and r.target is not None for r in redirects)


def note_writes(ctx: Ctx, redirects: list[Redirect]) -> None:
    """Remember redirect targets in order: a "No such file" error naming one is the
    redirect's (its directory did not exist yet), not a later read's."""
    for r in redirects:
        if r.op in _WRITES and r.target is not None and r.target.static:
            ctx.events.append(("write", r.target.text, ctx.join(r.target.text)))


def redirect_io(ctx: Ctx, st: Simple, stream: Stream) -> bool:
    """Writes through ``>``/``>>``/``&>``: edits. Returns True if any edit was made.

    The exact text written is kept for a ``>`` of known text (a heredoc, ``echo``): the
    file's new content, and the script a later ``python f`` in the same run will run.
    """
    edited = False
    for r in st.redirects:
        if r.op not in _WRITES or r.target is None:
            continue
        p = path_of(ctx, r.target, "redirect target")
        if p is None:
            continue
        exact = r.op in (">", ">|") and r.fd in (None, "1") and stream.text is not None
        appended = r.op == ">>" and r.fd in (None, "1") and stream.text is not None
        if exact:
            ctx.scripts[ctx.absolute(p)] = stream.text or ""
        if not writable(p):
            continue
        if exact:
            ctx.res.edits.append(Edit(p, content=stream.text))
        elif appended:   # `echo x >> f`: known lines after the last one
            ctx.res.edits.append(Edit(p, insert_line=APPEND, new=stream.text))
        else:
            ctx.res.edits.append(Edit(p))
        edited = True
    return edited


def edit_files(ctx: Ctx, ops: list[Word], what: str,
               how: Callable[[str], Edit] | None = None) -> Stream:
    for w in ops:
        p = path_of(ctx, w, f"{what} target")
        if p is not None:
            ctx.res.edits.append(how(p) if how is not None else Edit(p))
    return EMPTY


# --------------------------------------------------------------------------- sed -i


def sed_in_place(ctx: Ctx, ops: list[Word], scripts: list[str], quiet: bool,
                 extended: bool) -> Stream:
    """``sed -i``: the program is run on the current text when that is known (the edit
    map does it); a program at fixed line numbers can also be replayed without it. A
    program sed rejected (its ``sed: -e expression #1, char 47: unknown command`` is in
    the output, and this interpreter cannot read it either) changed nothing."""
    if ctx.lines is not None and not parses(scripts, extended) and _rejected(ctx):
        ctx.note("sed -i: the program was rejected, nothing edited")
        return EMPTY
    files = tuple((name, text) for name in files_read(scripts, extended)
                  if (p := ctx.join(name)) is not None
                  and (text := ctx.scripts.get(ctx.absolute(p))) is not None)
    program = SedScript(tuple(scripts), quiet, extended, files)
    fixed = None if quiet else _sed_line_edit(scripts)

    def edit(p: str) -> Edit:
        if fixed is None:
            return Edit(p, sed=program)
        base = fixed(p)
        return Edit(p, hunks=base.hunks, insert_line=base.insert_line, new=base.new, sed=program)
    return edit_files(ctx, ops, "sed -i", edit)


#: GNU sed rejecting its program (nothing is edited then)
_SED_REJECTED = re.compile(r"^sed: (?:-e expression #\d+, char \d+|file .+ line \d+): ")


#: the key counting sed error lines already handed out (``ctx.errors`` is shared by the
#: command's nested contexts; no path is named so)
_USED = "\0sed rejections"


def _rejected(ctx: Ctx) -> bool:
    """Is there an error line of sed rejecting a program not yet handed to one? (The
    n-th such line is the n-th program this interpreter cannot read either.)"""
    seen = sum(1 for ln in ctx.lines or () if _SED_REJECTED.match(ln))
    if seen <= ctx.errors[_USED]:
        return False
    ctx.errors[_USED] += 1
    return True


_SED_ADDRESSED = re.compile(r"\s*(\d+)(?:\s*,\s*(\d+))?\s*([iacds])(.*)", re.S)


def _sed_line_edit(scripts: list[str]) -> Callable[[str], Edit] | None:
    """``sed -i`` with ONE command at fixed line numbers, replayable without the file:
    ``Ni\\ text`` / ``Na\\ text`` (insert before / after line N), ``N[,M]d``, ``N[,M]c\\
    text``, ``Ns/x/y/`` (line N rewritten; a ``\\n`` in y adds lines)."""
    if len(scripts) != 1:
        return None
    m = _SED_ADDRESSED.fullmatch(scripts[0].strip())
    if m is None:
        return None
    a, b, op, rest = int(m.group(1)), int(m.group(2) or m.group(1)), m.group(3), m.group(4)
    if a < 1 or b < a:
        return None
    count = b - a + 1
    if op == "d":
        if rest.strip():
            return None
        return lambda p: Edit(p, hunks=((a, count, a - 1, 0),))
    if op == "s":
        parts = _sed_s_parts(rest)
        if parts is None or (count > 1 and "\\n" in parts[1]):
            return None
        added = parts[1].count("\\n")
        return lambda p: Edit(p, hunks=((a, count, a, count + added),))
    # `a\<newline>text`, `a\text` (GNU keeps the spaces after the backslash), `a text`
    text = rest.replace("\\\n", "\n", 1) if rest.startswith("\\\n") else rest.lstrip(" \t")
    text = (text[1:] if text.startswith(("\\", "\n")) else text).replace("\\\n", "\n")
    lines = [ln for part in text.split("\n") for ln in part.split("\\n")]
    if op == "c":
        return lambda p: Edit(p, hunks=((a, count, a, len(lines)),))
    if count > 1:
        return None
    new = "".join(ln + "\n" for ln in lines)
    return lambda p: Edit(p, insert_line=a - 1 if op == "i" else a, new=new)


def _sed_s_parts(rest: str) -> tuple[str, str] | None:
    """``/x/y/flags`` -> (x, y) when the delimiters can be told; None otherwise."""
    if not rest or rest[0] in "\\\n ":
        return None
    delim, parts, cur, i = rest[0], [], "", 1
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest):
            cur += rest[i:i + 2]
            i += 2
            continue
        if ch == delim:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if len(parts) != 2 or not re.fullmatch(r"[gpiIeM0-9]*\s*", cur):
        return None
    return parts[0], parts[1]


# --------------------------------------------------------------------------- patches


class _PatchReader:
    """Codex ``apply_patch`` bodies: ``*** Update/Add/Delete File: p`` sections."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx
        self.edits: list[Edit] = []
        self.path: str | None = None
        self.mode = ""
        self.old: list[str] = []
        self.new: list[str] = []

    def flush(self) -> None:
        if self.path is not None:
            if self.mode == "update" and (self.old or self.new):
                self.edits.append(Edit(self.path, old="\n".join(self.old),
                                       new="\n".join(self.new)))
            elif self.mode == "add":
                self.edits.append(Edit(self.path, content="".join(x + "\n" for x in self.new)))
        self.old.clear()
        self.new.clear()

    def header(self, ln: str) -> bool:
        head = re.match(r"\*\*\* (Update|Add|Delete) File: (.+)$", ln)
        if head:
            self.flush()
            self.mode = head.group(1).lower()
            self.path = self.ctx.join(head.group(2).strip())
            if self.mode == "delete" and self.path:
                self.edits.append(Edit(self.path, content=""))
            return True
        if ln.startswith("*** "):
            if ln.startswith("*** Move to: "):
                self.ctx.note("apply_patch rename not followed")
            if ln.startswith("*** End Patch"):
                self.flush()
                self.path = None
            return True
        return False

    def line(self, ln: str) -> None:
        if self.header(ln):
            return
        if ln.startswith("@@"):
            self.flush()
        elif self.mode == "add" and ln.startswith("+"):
            self.new.append(ln[1:])
        elif self.mode == "update":
            tag, body = ln[:1], ln[1:]
            if tag in "- " or ln == "":
                self.old.append(body)
            if tag in "+ " or ln == "":
                self.new.append(body)


def _apply_patch_edits(text: str, ctx: Ctx) -> list[Edit]:
    reader = _PatchReader(ctx)
    for ln in text.rstrip("\n").split("\n"):
        reader.line(ln)
    reader.flush()
    return reader.edits


def _diff_edits(text: str, strip: int | None, ctx: Ctx) -> list[Edit]:
    """A unified diff (``git apply``, ``patch -pN``) -> one Edit per hunk."""
    edits: list[Edit] = []
    for fd in parse_diff(text, strip):
        old = ctx.join(fd.old_path) if fd.old_path else None
        new = ctx.join(fd.new_path) if fd.new_path else None
        if old is None and new is None:
            continue
        for hunk in fd.hunks:
            if old is None:
                edits.append(Edit(new, content="".join(x + "\n" for x in hunk.new_lines)))
            elif new is None:
                edits.append(Edit(old, content=""))
            else:
                edits.append(Edit(new, old="\n".join(hunk.old_lines),
                                  new="\n".join(hunk.new_lines),
                                  hunks=((hunk.old_start, hunk.old_count, hunk.new_start,
                                          hunk.new_count),)))
    return edits


def _apply_patch(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    body = st.heredoc
    if body is None:
        body = next((w.text for w in argv[1:] if "*** Begin Patch" in w.text), None)
    if body is None and stdin is not None:
        body = stdin.text
    if body is None:
        ctx.note("apply_patch without a visible patch")
        return EMPTY
    ctx.res.edits.extend(_apply_patch_edits(body, ctx))
    return EMPTY


def _patch(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, valued, _ops = split_opts(argv, {"--strip", "--input", "--directory"}, "pidoDrBVYzFg")
    strip = val(valued, "-p", "--strip")
    given = val(valued, "-i", "--input")
    files = [Word(given)] if given else []
    return apply_diff(ctx, st, stdin, int(strip) if strip and strip.isdecimal() else 0,
                      "patch", files)


def apply_diff(ctx: Ctx, st: Simple, stdin: Stream | None, strip: int | None,
               what: str, files: list[Word] | None = None) -> Stream:
    """A unified diff applied (``git apply``, ``patch``): from a heredoc, the pipe, or
    patch files whose text the run wrote (``cat > fix.patch <<'EOF' ... EOF && git apply
    fix.patch``), as any visible patch."""
    body = st.heredoc if st.heredoc is not None else (stdin.text if stdin else None)
    if body is None and files:
        texts = [ctx.scripts.get(ctx.absolute(p)) if (p := path_of(ctx, w, "patch")) else None
                 for w in files]
        body = "".join(texts) if texts and all(t is not None for t in texts) else None
    if body is None:
        ctx.note(f"{what}: patch text not visible, edited files unknown")
        return EMPTY
    ctx.res.edits.extend(_diff_edits(body, strip, ctx))
    return EMPTY


def _move(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    """``mv SRC DST`` / ``cp SRC DST``: DST now holds SRC's text, an edit of DST (``awk
    ... f > tmp && mv tmp f``): with that text when the run wrote SRC with known text,
    else one whose lines the next read of DST places. ``mv`` of a repository file
    empties it (it is gone). Several sources into a directory are not followed."""
    _, _, ops = split_opts(argv, {"--target-directory", "--suffix"}, "tS")
    if len(ops) != 2:
        return EMPTY
    src, dst = path_of(ctx, ops[0], "source"), path_of(ctx, ops[1], "target")
    if src is None or dst is None:
        return EMPTY
    text = ctx.scripts.get(ctx.absolute(src))
    if text is not None:
        ctx.scripts[ctx.absolute(dst)] = text
    if writable(dst):
        ctx.res.edits.append(Edit(dst, content=text) if text is not None else Edit(dst))
    if posixpath.basename(argv[0].text) == "mv" and writable(src):
        ctx.res.edits.append(Edit(src, content=""))
    return EMPTY


def _tee(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    flags, _, ops = split_opts(argv, set())
    text = stdin.text if stdin else None
    if st.heredoc is not None:
        text = st.heredoc if st.heredoc_exact else None
    for w in ops:
        p = path_of(ctx, w, "tee target")
        if p is None:
            continue
        append = "a" in flags or "--append" in flags
        if text is not None and not append:
            ctx.scripts[ctx.absolute(p)] = text
        if writable(p):
            ctx.res.edits.append(Edit(p, content=text) if text is not None and not append
                                 else Edit(p, insert_line=APPEND, new=text)
                                 if text is not None else Edit(p))
    return stdin or EMPTY


# --------------------------------------------------------------------------- python


def run_python(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    """``python -c CODE``, ``python - <<EOF``, ``python fix.py`` (a script written earlier
    in the run): files the script writes are edits; a single file it only reads is what
    its output may show (``Seg`` filtered and loose: the text decides)."""

    code = _python_code(ctx, argv, st)
    if code is None:
        return EMPTY
    reads, writes = script_files(code)
    for raw in writes:
        p = ctx.join(raw)
        if p is not None and writable(p):
            ctx.res.edits.append(Edit(p))
    readonly = [r for r in reads if r not in writes]
    if len(readonly) == 1:
        p = ctx.join(readonly[0])
        if p is not None:
            return Stream(segs=[Seg(p, readonly[0], filtered=True, loose=True, guess=True)])
    return EMPTY


def _python_code(ctx: Ctx, argv: list[Word], st: Simple) -> str | None:
    args = argv[1:]
    for i, w in enumerate(args):
        if w.text == "-c" and i + 1 < len(args):
            return args[i + 1].text if args[i + 1].static else None
        if w.text == "-m":
            return None
        if w.text == "-":
            break
        if not w.text.startswith("-"):
            p = ctx.join(w.text)
            return ctx.scripts.get(ctx.absolute(p)) if p is not None else None
    return st.heredoc if st.heredoc is not None and st.heredoc_exact else None


#: ``python``, ``python3.11``, ``pypy3``...: one program by many names (``shell.programs``)
PYTHON = Program("run", run_python, rules.python)
#: the programs this module reads, with their category (``shell.programs`` holds them all)
PROGRAMS = {
    "tee": Program("edit", _tee),
    # a move or copy changes a file only when it lands on one (then it is an edit)
    **dict.fromkeys(("mv", "cp"), Program("other", _move, silent=True)),
    **dict.fromkeys(("apply_patch", "applypatch"), Program("edit", _apply_patch)),
    "patch": Program("edit", _patch),
    "python": PYTHON, "python3": PYTHON,
}
