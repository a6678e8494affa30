"""Error lines of shell programs: which paths a command failed on.

``cat: x.py: No such file or directory``, ``sed: can't read x.py: ...``, ``ls: cannot
access 'x'``, ``head: cannot open 'x' for reading: ...``, ``grep: x: Is a directory``:
the named path was not shown. One line per failure, so callers can hand each line to
the command that failed in execution order.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["ERROR_LINE", "error_paths"]

ERROR_LINE = re.compile(
    r"^(?:[\w.+-]+: )+(?:line \d+: )?(?:cannot open (?:file )?|can't read |cannot access "
    r"|read error on |couldn't edit |cannot stat )?[`'‘\"]?(?P<p>[^`'’\":]+?)[`'’\"]?"
    r"(?: for reading)?(?:: (?:IO error[^:]*: )?| \()(?:No such file or directory|Is a directory"
    r"|Permission denied|Not a directory|not a regular file)")


#: words every error line holds one of (each with ": " before them)
_WORDS = ("No such", "directory", "denied", "regular file")


def error_paths(lines: list[str]) -> Counter[str]:
    """Paths named by "No such file"-like lines, with how many times (one per failure)."""
    bad: Counter[str] = Counter()
    text = "\n".join(lines)
    if ": " not in text:
        return bad
    # only the lines that hold one of the words can be error lines: found with C
    # searches, in order (a long output, a whole file cat'ed, holds few or none)
    starts: set[int] = set()
    for word in _WORDS:
        at = text.find(word)
        while at >= 0:
            starts.add(text.rfind("\n", 0, at) + 1)
            at = text.find(word, at + 1)
    for start in sorted(starts):
        end = text.find("\n", start)
        ln = text[start:end if end >= 0 else len(text)]
        if ": " in ln:
            m = ERROR_LINE.match(ln)
            if m:
                bad[m.group("p").strip()] += 1
    return bad
