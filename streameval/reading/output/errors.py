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


def error_paths(lines: list[str]) -> Counter[str]:
    """Paths named by "No such file"-like lines, with how many times (one per failure)."""
    bad: Counter[str] = Counter()
    text = "\n".join(lines)    # looked at once first: as a rule, no line is an error
    if ": " not in text or not ("No such" in text or "directory" in text or "denied" in text
                                or "regular file" in text):
        return bad
    for ln in lines:
        if ": " in ln and ("No such" in ln or "directory" in ln or "denied" in ln
                           or "regular file" in ln):
            m = ERROR_LINE.match(ln)
            if m:
                bad[m.group("p").strip()] += 1
    return bad
