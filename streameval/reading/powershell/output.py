"""What PowerShell printed: error records, ``Select-String`` hits, ``Get-ChildItem``
listings, and lines numbered by the agent's own ``ForEach-Object`` counter.

The shapes, from PowerShell's formatting of the objects these cmdlets emit:

- an error record: ``Get-Content : Cannot find path 'C:\\x' because it does not exist.``
  then ``At line:1 char:1`` and ``+ ...`` lines (a failed read showed nothing of the file);
- a ``Select-String`` match: ``path:N:text`` (the path relative to the current directory,
  or absolute: ``C:\\repo\\x.ts:12:text``), ``InputStream:N:text`` for piped text; agents
  also print their own ``"{0}:{1}:{2}" -f $_.Path, $_.LineNumber, $_.Line.Trim()``;
- ``Get-ChildItem``: a table per directory (``Directory: C:\\repo\\src`` then ``Mode
  LastWriteTime Length Name`` rows; a mode starting ``d`` is a directory), or full paths
  one per line (``Select-Object -ExpandProperty FullName``, or a ``FullName`` column), or
  bare names (``-Name``);
- lines numbered by a counter: ``  12: text`` or ``12:text``.
"""

from __future__ import annotations

import re

__all__ = ["drop_errors", "failed_paths", "hit_lines", "counted_lines", "listed"]

_ERROR_HEAD = re.compile(r"^[\w.-]+ : \S")
_ERROR_TAIL = re.compile(r"^(?:At line:\d+ char:\d+|At .+:\d+ char:\d+|\s*\+ |\s+\+ )")
_NOT_FOUND = re.compile(r"Cannot find path '([^']+)' because it does not exist|"
                        r"Access to the path '([^']+)' is denied")
_HIT = re.compile(r"^(?:> )?(?P<path>(?:[A-Za-z]:)?[^:*?\"<>|\r\n]+):(?P<n>\d+):(?P<text>.*)$")
_COUNTED = re.compile(r"^\s*(\d+)\s?[:|]\s?(.*)$")
_DIRECTORY = re.compile(r"^\s*Directory: (.+?)\s*$")
_ROW = re.compile(r"^(?P<mode>[-d][-a-zA-Z]{3,6})\s+\S+\s+\S+(?:\s+[AP]M)?\s+(?:\d+\s+)?"
                  r"(?P<name>\S.*?)\s*$")
_ABSOLUTE = re.compile(r"^\s*(?P<p>[A-Za-z]:\\[^*?\"<>|\r\n]*?)\s*$")
_HEADERS = re.compile(r"^\s*(?:Mode\s+LastWriteTime|FullName|Name|-{2,}[\s-]*)\s*$")


def drop_errors(lines: list[str]) -> list[str]:
    """The lines without PowerShell's error records (a head line ``Cmdlet : message``,
    its wrapped text, and the ``At line:``/``+ ...`` lines that follow)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        if _ERROR_HEAD.match(lines[i]):
            j = i + 1
            while j < len(lines) and j - i <= 3 and not _ERROR_TAIL.match(lines[j]):
                j += 1   # the message wraps over a few lines
            if j < len(lines) and _ERROR_TAIL.match(lines[j]):
                while j < len(lines) and (_ERROR_TAIL.match(lines[j]) or not lines[j].strip()):
                    j += 1
                i = j
                continue
        out.append(lines[i])
        i += 1
    return out


def failed_paths(lines: list[str]) -> set[str]:
    """Paths an error record says could not be read (as PowerShell wrote them)."""
    found: set[str] = set()
    for line in lines:
        for m in _NOT_FOUND.finditer(line):
            found.add((m.group(1) or m.group(2)).strip())
    return found


def hit_lines(lines: list[str]) -> dict[str, tuple[list[int], list[str]]]:
    """``path:N:text`` lines, by path (``InputStream`` for piped text), in order."""
    hits: dict[str, tuple[list[int], list[str]]] = {}
    for line in lines:
        m = _HIT.match(line)
        if m is None:
            continue
        numbers, texts = hits.setdefault(m.group("path").strip(), ([], []))
        numbers.append(int(m.group("n")))
        texts.append(m.group("text"))
    return hits


def counted_lines(lines: list[str]) -> tuple[list[int], list[str]]:
    """Lines an agent's counter numbered (``  12: text``): their numbers and text, when
    most non-empty lines are such and the numbers go up; else nothing."""
    numbers: list[int] = []
    texts: list[str] = []
    other = 0
    for line in lines:
        m = _COUNTED.match(line)
        if m is None:
            other += bool(line.strip())
            continue
        n = int(m.group(1))
        if numbers and n <= numbers[-1]:
            return [], []
        numbers.append(n)
        texts.append(m.group(2))
    if not numbers or other > len(numbers) // 10:
        return [], []
    return numbers, texts


def listed(lines: list[str], names_under: str | None = None) -> list[str]:
    """The files a ``Get-ChildItem`` output names: full paths, table rows joined with
    their ``Directory:`` (directories left out), or, with ``names_under`` (``-Name``),
    bare names joined with the listed directory."""
    files: list[str] = []
    directory: str | None = None
    for line in lines:
        if not line.strip() or _HEADERS.match(line):
            continue
        head = _DIRECTORY.match(line)
        if head is not None:
            directory = head.group(1)
            continue
        row = _ROW.match(line)
        if row is not None and directory is not None:
            if not row.group("mode").startswith("d"):
                files.append(directory.rstrip("\\/") + "\\" + row.group("name"))
            continue
        full = _ABSOLUTE.match(line)
        if full is not None:
            files.append(full.group("p"))
        elif names_under is not None:
            name = line.strip()
            files.append(name if names_under in ("", ".") else names_under + "\\" + name)
    return files
