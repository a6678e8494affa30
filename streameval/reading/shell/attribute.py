"""One output, several printers: which lines each visible pipe of a command printed.

With one printer it gets every line. With several, a listing/grep parser only gets the
lines that look like its own: a run starting where the previous known output ended, or,
after output of unknown length (``git branch``, ``cat f``, ``python``), the first run of
lines only its tool prints (``ls -l`` lines, ``path:N:``). A tool whose lines look like
anyone's (``rg --files``, plain ``ls``) after unknown output gets nothing: fewer listed
names beat another command's text taken for file names.

A file's text (``cat f``) printed among other outputs is given the lines between what
came before and after it when those are known; otherwise the whole output, marked
shared, so that lines matching nothing there are not taken for the agent's writing.
"""

from __future__ import annotations

from collections.abc import Callable

from streameval.reading.output.errors import ERROR_LINE
from streameval.reading.shell.context import Ctx, Stream
from streameval.reading.shell.programs import program

__all__ = ["attribute", "one_line"]


def one_line(name: str, args: list[str]) -> int | None:
    """1 for a command that prints exactly one line (``pwd && ls``: the listing starts
    after it), else None."""
    entry = program(name)
    if (entry is not None and entry.lines == 1) or (name == "git" and args in (
            ["branch", "--show-current"], ["rev-parse", "HEAD"],
            ["rev-parse", "--abbrev-ref", "HEAD"], ["rev-parse", "--show-toplevel"])):
        return 1
    return None


def attribute(lines: list[str], shows: list[Stream], ctx: Ctx) -> list[tuple[list[str], bool]]:
    """(lines, shared) for each visible pipe, in execution order; ``shared`` = the
    lines may hold other commands' output too."""
    printers = [k for k, s in enumerate(shows) if s.prints()]
    if len(printers) <= 1:
        return [(lines, False) for _ in shows]
    blocks: list[tuple[list[str], bool]] = [([], False) for _ in shows]
    cur, unknown = 0, False
    for n, k in enumerate(printers):
        s = shows[k]
        if s.fmt is None:
            if s.segs:
                blocks[k] = _text_block(lines, cur, shows, printers[n + 1:], unknown)
            cur, unknown = _skip_known(lines, cur, s, unknown)
            continue
        shape = s.shape or (lambda ln: 1)
        block, cur, ok = _block(lines, cur, shape, unknown, n + 1 < len(printers))
        if not ok and any(ln.strip() and shape(ln) for ln in lines[cur:]):
            ctx.note("output shared by several commands: lines that may be a listing's "
                     "not taken")
        blocks[k] = (block, False)
        unknown = unknown and not ok   # found nothing of its own: it printed nothing
    return blocks


def _text_block(lines: list[str], cur: int, shows: list[Stream], later: list[int],
                unknown: bool) -> tuple[list[str], bool]:
    """A file's text among several outputs: exactly its lines when it starts at a known
    place and everything after it prints nothing; else the rest of the output, shared."""
    quiet_after = all(not shows[k].prints() for k in later)
    if not unknown and quiet_after:
        return lines[cur:], False
    return (lines[cur:] if not unknown else lines), True


def _skip_known(lines: list[str], cur: int, s: Stream, unknown: bool) -> tuple[int, bool]:
    """Step over output we know exactly (``echo``, ``pwd``); anything else has unknown
    length."""
    if s.nlines is not None and not (s.segs or s.fmt or s.fallback) and not unknown:
        return min(cur + s.nlines, len(lines)), False
    if s.text is not None and not (s.segs or s.opaque or s.fallback) and not unknown:
        want = s.text.split("\n")
        if s.text.endswith("\n"):
            want.pop()
        if lines[cur:cur + len(want)] == want:
            return cur + len(want), False
    return cur, True


def _block(lines: list[str], cur: int, shape: Callable[[str], int], unknown: bool,
           later: bool) -> tuple[list[str], int, bool]:
    """(the parser's lines, where the next output starts, attributed?)."""
    n = len(lines)
    i = cur
    while i < n and not lines[i].strip():
        i += 1
    if unknown or (i < n and shape(lines[i]) == 0):
        # not our line where we would start: our first unmistakable one, if any
        first = next((j for j in range(i, n) if shape(lines[j]) == 2), None)
        if first is None:
            return [], cur, False
        i = first
    if not later:
        return lines[i:], n, True
    strong = False
    j = i
    while j < n:
        ln = lines[j]
        if not ln.strip():
            # blank lines stay inside a run only between lines of a recognized tool
            m = j + 1
            while m < n and not lines[m].strip():
                m += 1
            if not strong or m == n or shape(lines[m]) == 0:
                break
            j = m
            continue
        fit = shape(ln)
        if fit == 0 and not ERROR_LINE.match(ln):
            break
        strong = strong or fit == 2
        j += 1
    return lines[i:j], j, True
