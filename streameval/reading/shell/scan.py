"""Programs in a command line the shell parser rejected: for categories only.

Agents that escape their newlines twice (SWE-agent ``bash -lc 'cat >f <<PY\\n...'``) are
the usual source of text the parser rejects. Error recovery would invent commands from
the broken part, so the syntax tree is not trusted; a plain scan finds the words at
command positions instead (line starts, after ``&&``/``||``/``;``/``|``/``(``), skips
environment prefixes, wrappers (``timeout 5``) and heredoc bodies. Nothing is read or
edited from such text (docs/metrics.md §7: categories by rules).
"""

from __future__ import annotations

import posixpath
import re
import shlex

from streameval.reading.shell.context import MAX_DEPTH
from streameval.reading.shell.programs import command_category
from streameval.reading.shell.syntax import Word
from streameval.reading.shell.writers import writable
from streameval.tools import wrapped_script

__all__ = ["scan_commands", "scanned_category", "unwrap"]

#: command separators; parentheses only at command positions (not ``a/(group)/b.py``)
_SPLIT = re.compile(r"&&|\|\||;|\|&?|(?<![<>&])&(?![&>])|`|\$\(|(?:^|(?<=[\s;&|]))[({]"
                    r"|[)}](?=[\s;&|]|$)")
_HEREDOC = re.compile(r"<<-?\s*[\\'\"]*([A-Za-z_]\w*)")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in",
             "case", "esac", "!", "function", "{", "}"}
_REDIRECT_WORD = re.compile(r"^(\d*|&)(>>?\|?|<<<|<<-?|<)(.*)$")

#: programs that run another command given in their arguments, with their valued options
_WRAPPERS: dict[str, tuple[set[str], int]] = {
    "sudo": ({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, 0),
    "timeout": ({"-s", "-k", "--signal", "--kill-after"}, 1),
    "nohup": (set(), 0), "time": (set(), 0), "nice": ({"-n"}, 0), "exec": ({"-a"}, 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0), "command": (set(), 0), "builtin": (set(), 0),
    "env": ({"-u", "-C", "-S", "--unset", "--chdir"}, 0), "xvfb-run": ({"-a", "-s"}, 0),
}
_XARGS_VALUES = {"-n", "-L", "-P", "-s", "-d", "-E", "-I", "-a", "--max-args", "--max-procs",
                 "--delimiter", "--replace", "--arg-file", "--max-lines", "--max-chars"}


def unwrap(argv: list[Word]) -> tuple[list[Word], bool]:
    """Strip ``sudo``/``timeout 10``/``env X=1``/``nohup``/``time``...; True if via xargs."""
    xargs = False
    for _ in range(8):
        if not argv:
            break
        name = posixpath.basename(argv[0].text)
        if name == "xargs":
            i = 1
            while i < len(argv) and argv[i].text.startswith("-"):
                i += 2 if argv[i].text in _XARGS_VALUES else 1
            argv, xargs = argv[i:], True
            continue
        if name not in _WRAPPERS:
            break
        if name == "command" and len(argv) > 1 and argv[1].text in ("-v", "-V"):
            return [], xargs
        values, positional = _WRAPPERS[name]
        i = 1
        while i < len(argv) and (argv[i].text.startswith("-") or
                                 (name == "env" and "=" in argv[i].text)):
            i += 2 if argv[i].text in values else 1
        argv = argv[i + positional:]
    return argv, xargs


def scan_commands(source: str, depth: int = 0) -> list[tuple[list[str], str | None]]:
    """(argv, stdout target) of every command one can find in text the parser rejected.

    A literal ``\\n`` counts as a line break.
    """
    found: list[tuple[list[str], str | None]] = []
    heredoc: str | None = None
    for line in source.replace("\\n", "\n").split("\n"):
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        for seg in _SPLIT.split(line):
            cmd = _words(seg)
            if cmd is None:
                continue
            script = wrapped_script(cmd[0])
            if script is not None and depth < MAX_DEPTH:
                found.extend(scan_commands(script, depth + 1))   # bash -lc 'the script'
            else:
                found.append(cmd)
        m = _HEREDOC.search(line)
        heredoc = m.group(1) if m else None
    return found


def _words(seg: str) -> tuple[list[str], str | None] | None:
    try:
        raw = shlex.split(seg, comments=True)
    except ValueError:
        raw = seg.split()
    words: list[str] = []
    target: str | None = None
    i = 0
    while i < len(raw):
        w = raw[i].strip("'\"\\")
        i += 1
        m = _REDIRECT_WORD.match(w)
        if m:
            fd, op, rest = m.groups()
            if not rest and i < len(raw):
                rest, i = raw[i].strip("'\"\\"), i + 1
            if op[0] == ">" and fd in ("", "1", "&") and not rest.startswith("&"):
                target = rest
            continue
        if not words and (w in _KEYWORDS or re.match(r"^\w+=", w)):
            continue
        words.append(w)
    argv, _ = unwrap([Word(w) for w in words])
    return ([w.text for w in argv], target) if argv and argv[0].text else None


def scanned_category(argv: list[str], target: str | None) -> str:
    """``cat >f`` writes f (an edit when f is a repo file, else nothing); the rest by
    ``programs.command_category``."""

    name = posixpath.basename(argv[0])
    if name in ("cat", "echo", "printf") and target is not None:
        return "edit" if target and writable(target) else "other"
    if name == "tee":
        ops = [a for a in argv[1:] if not a.startswith("-")]
        return "edit" if any(writable(a) for a in ops) else "other"
    return command_category(argv)
