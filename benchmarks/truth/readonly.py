"""Which recorded shell commands are read-only, so that running them again in the
tagged copy is safe and shows the same thing.

Conservative on purpose: a command is read-only only when every simple command in it is
one of a short list of programs that cannot write (``cat``, ``head``, ``tail``, ``nl``,
``grep``, ``sed`` without ``-i``/``w``/``e``, ``awk`` without ``system()``, ``getline``
or an output redirection, and a few that print no file lines: ``echo``, ``ls``, ``wc``,
``find`` without actions...), joined by pipes and chains, with no redirection but to
``/dev/null`` or another descriptor. Anything else gets the reason it is not, named by
its first offending program (``python``, ``sed -i``, ``redirect``...).
"""

from __future__ import annotations

import re

from truth.shellwords import Refused, Simple, split

#: programs that never write, whatever their arguments (``head -f`` aside)
PLAIN_READERS = {"cat", "head", "tail", "nl", "grep", "egrep", "fgrep", "wc", "cut", "tr",
                 "echo", "printf", "pwd", "true", "ls", "basename", "dirname", "cd",
                 "column", "rev", "tac", "fold", "expand", "od", "hexdump", "file", "stat"}
_SED_NOARG = set("=dDgGhHnNpPxz{}lLqQF")
_SED_TO_EOL = set("rRbtTv:")
_FIND_ACTIONS = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                 "-fprintf", "-fls"}
_AWK_PRINT = re.compile(r"\bprintf?\b[^;{}\n]*[>|]")
_AWK_BAD = re.compile(r"\bsystem\s*\(|\bgetline\b")


def why_not_read_only(command: str) -> str | None:
    """None when ``command`` is read-only, else the reason it is not."""
    try:
        parts = split(command)
    except Refused as exc:
        return f"shell: {exc}"
    if not parts:
        return "empty"
    for part in parts:
        why = _simple(part)
        if why is not None:
            return why
    return None


def _simple(part: Simple) -> str | None:
    for op, target in part.redirects:
        if op.endswith("<"):
            continue
        if op.endswith("&") and target.isdigit():
            continue
        if target != "/dev/null":
            return "redirect to a file"
    words = part.words
    if not words:
        return None
    if "=" in words[0] and not words[0].startswith("-"):
        return "variable assignment"
    return _program(words)


def _program(words: list[str]) -> str | None:
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("head", "tail") and any(a in ("-f", "-F", "--follow") or
                                        (a.startswith("-") and "f" in a[1:] and
                                         not a[1:].isdigit() and prog == "tail")
                                        for a in args):
        return "tail -f"
    if prog in PLAIN_READERS:
        return None
    if prog == "sed":
        return _sed(args)
    if prog in ("awk", "gawk", "mawk"):
        return _awk(args)
    if prog == "find":
        return "find with an action" if any(a in _FIND_ACTIONS for a in args) else None
    if prog == "sort":
        return "sort -o" if any(a == "-o" or a.startswith("--output") or
                                (a.startswith("-o") and len(a) > 2) for a in args) else None
    if prog == "uniq":
        return "uniq with an output file" if len([a for a in args if not a.startswith("-")]) > 1 \
            else None
    if prog == "xargs":
        return _xargs(args)
    return prog if prog else "empty"


def _sed(args: list[str]) -> str | None:
    scripts, why = _sed_scripts(args)
    if why is not None:
        return why
    return None if all(sed_script_read_only(x) for x in scripts) else "sed w/e"


def _sed_scripts(args: list[str]) -> tuple[list[str], str | None]:
    """The scripts of a sed command line (``-e`` each, or the first operand)."""
    scripts: list[str] = []
    operands: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        takes_script = a in ("-e", "--expression") or (
            a.startswith("-") and not a.startswith("--") and a.endswith("e") and len(a) > 1)
        if a.startswith("--in-place") or (a.startswith("-") and not a.startswith("--")
                                          and "i" in a[1:]):
            return [], "sed -i"
        if a in ("--file",) or a.startswith("--file=") or (
                a.startswith("-") and not a.startswith("--") and "f" in a[1:]):
            return [], "sed -f"
        if takes_script:
            if k + 1 >= len(args):
                return [], "sed: -e without a script"
            scripts.append(args[k + 1])
            k += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif not a.startswith("-") or a == "-":
            operands.append(a)
        k += 1
    if not scripts and not operands:
        return [], "sed without a script"
    return scripts or operands[:1], None


def sed_script_read_only(s: str) -> bool:
    """No ``w``/``W``/``e`` command and no ``s///w``/``s///e`` flag (GNU sed syntax)."""
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in " \t\n;":
            i += 1
        if i >= n:
            return True
        i = _sed_addresses(s, i)
        if i < 0 or i >= n:
            return False
        i = _sed_command(s, i)
        if i < 0:
            return False


def _sed_addresses(s: str, i: int) -> int:
    """Past ``addr[,addr][!]`` at ``i``; -1 when malformed."""
    n = len(s)
    i = _sed_address(s, i)
    if 0 <= i < n and s[i] == ",":
        i = _sed_address(s, i + 1)
    while 0 <= i < n and s[i] in " \t!":
        i += 1
    return i


def _sed_command(s: str, i: int) -> int:
    """Past one command at ``i``; -1 when it writes or runs something, or is unknown."""
    n = len(s)
    cmd = s[i]
    i += 1
    if cmd in "wWe":
        return -1
    if cmd in "sy":
        i, flags = _sed_s(s, i, cmd)
        return -1 if i < 0 or "w" in flags or "e" in flags else i
    if cmd in "aic" or cmd in _SED_TO_EOL or cmd == "#":
        return _to_line_end(s, i, cmd in "aic" or cmd == "#")
    if cmd in _SED_NOARG:
        while i < n and s[i].isdigit():
            i += 1
        return i
    return -1


def _sed_address(s: str, i: int) -> int:
    """Past one address at ``i`` (or ``i`` when there is none); -1 when malformed."""
    n = len(s)
    if i < n and s[i] in "+~" and i + 1 < n and s[i + 1].isdigit():
        i += 1
    if i < n and s[i].isdigit():
        while i < n and (s[i].isdigit() or s[i] == "~"):
            i += 1
        return i
    if i < n and s[i] == "$":
        return i + 1
    if i < n and (s[i] == "/" or (s[i] == "\\" and i + 1 < n)):
        delim = s[i] if s[i] == "/" else s[i + 1]
        i += 1 if s[i] == "/" else 2
        while i < n and s[i] != delim:
            i += 2 if s[i] == "\\" else 1
        if i >= n:
            return -1
        i += 1
        while i < n and s[i] in "IM":
            i += 1
    return i


def _sed_s(s: str, i: int, cmd: str) -> tuple[int, str]:
    n = len(s)
    if i >= n:
        return -1, ""
    delim = s[i]
    i += 1
    for _ in range(2):
        while i < n and s[i] != delim:
            i += 2 if s[i] == "\\" else 1
        if i >= n:
            return -1, ""
        i += 1
    start = i
    while i < n and s[i] not in ";\n}":
        i += 1
    return i, s[start:i].strip() if cmd == "s" else ""


def _to_line_end(s: str, i: int, text: bool) -> int:
    """Past an argument that runs to the end of the line (``a text``, ``r file``,
    ``b label``); a label also ends at ``;`` in GNU sed."""
    n = len(s)
    while i < n and s[i] != "\n":
        if text and s[i] == "\\" and i + 1 < n:
            i += 2
            continue
        if not text and s[i] in ";}":
            break
        i += 1
    return i


def _awk(args: list[str]) -> str | None:
    k = 0
    prog = None
    while k < len(args):
        a = args[k]
        if a in ("-f", "--file", "-i", "--include", "-E", "--exec") or a.startswith("--inplace"):
            return "awk -f/-i"
        if a in ("-v", "-F", "--assign", "--field-separator"):
            k += 2
            continue
        if a.startswith("-") and len(a) > 1:
            k += 1
            continue
        prog = a
        break
    if prog is None:
        return "awk without a program"
    if _AWK_BAD.search(prog) or _AWK_PRINT.search(prog):
        return "awk system/getline/redirect"
    return None


def _xargs(args: list[str]) -> str | None:
    k = 0
    with_value = {"-n", "-I", "-L", "-d", "-s", "-P", "-E", "-a"}
    while k < len(args) and args[k].startswith("-"):
        k += 2 if args[k] in with_value else 1
    rest = args[k:]
    if not rest:
        return None   # echo
    why = _program(rest)
    return None if why is None else f"xargs {why}"
