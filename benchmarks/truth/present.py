"""What a harness made of a command's output, and whether the trace recorded the same.

A re-executed command gives the raw output, line by line, each line with the ids its
tags carried. Harnesses do not show the raw output:

- mini-swe-agent cuts a long output to a head and a tail around an elision notice
  (``streameval.reading.output.harness``); the cut is taken from the trace itself (the
  recorded head and tail must be the raw output's prefix and suffix), and every line
  the head or tail touches counts as shown, whole (a harness-cut edge line too);
- Claude Code drops leading blank lines and trailing white space, and prefixes
  ``Exit code N`` to a failure;
- OpenHands' terminal renders through a pty: tabs expanded, lines right-stripped, the
  whole output stripped;
- Codex records the output as it came.

``present`` applies the format's rule to the raw lines and returns the lines the agent
saw with their ids. ``compare`` says whether the recorded output is that text: exactly,
up to white space at line ends and around the output, or as the same lines in another
order (``grep -r`` and ``find`` list a directory in the file system's order, which a
fresh copy does not keep); else it is not.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from truth.tags import lines_of

_CUT = re.compile(r"^\[\.\.\. (?:\d+|\{n\}) characters elided \.\.\.\]$")
_BINARY = re.compile(r"^(?:grep: .*: binary file matches|Binary file .* matches)$")
_EXIT = re.compile(r"^(?:Error: )?Exit code -?\d+\n")


@dataclass
class Shown:
    """The raw output's lines (text without line end) and the ids each carried."""

    lines: list[str]
    ids: list[list[int]]

    @classmethod
    def of(cls, text: str, ids: list[list[int]] | None = None) -> Shown:
        lines = [ln[:-1] if ln.endswith("\n") else ln for ln in lines_of(text)]
        return cls(lines, ids if ids is not None else [[] for _ in lines])


def parts_of(recorded: str) -> list[str]:
    """The recorded output split at mini-swe-agent's elision line (one part if none)."""
    parts: list[list[str]] = [[]]
    for line in recorded.split("\n"):
        if _CUT.match(line):
            parts.append([])
        else:
            parts[-1].append(line)
    return ["\n".join(p) for p in parts]


def visible(raw: str, shown: Shown, recorded: str, fmt: str) -> tuple[list[int], str] | None:
    """Indices of the raw lines the agent saw and how the recorded output matched
    (``exact``, ``white space``, ``order``); None when it is not the raw output."""
    parts = parts_of(recorded)
    if len(parts) == 2:
        return _cut(raw, parts)
    keep = list(range(len(shown.lines)))
    text = raw
    if fmt == "claude":
        recorded = _EXIT.sub("", recorded, count=1)
        keep, text = _trim(shown.lines, lead_blank=True)
    elif fmt in ("openhands", "openhands-sdk", "openhands-events"):
        keep, text = _trim([ln.expandtabs(8).rstrip() for ln in shown.lines],
                           lead_blank=True, strip_first=True)
    how = same_text(text, recorded)
    return None if how is None else (keep, how)


def same_text(ours: str, recorded: str) -> str | None:
    if ours in (recorded, recorded + "\n") or ours + "\n" == recorded:
        return "exact"
    a, b = _loose(ours), _loose(recorded)
    if a == b:
        return "white space"
    if Counter(a) == Counter(b):
        return "order"
    # the agent's tree had compiled files (__pycache__, build/): grep's notices about them
    # are no file's lines, and leave the rest of the output as it was
    a = [ln for ln in a if not _BINARY.match(ln)]
    b = [ln for ln in b if not _BINARY.match(ln)]
    if Counter(a) == Counter(b):
        return "order, binary-file notices aside"
    return None


def _loose(text: str) -> list[str]:
    lines = [ln.expandtabs(8).rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if lines:
        lines[0] = lines[0].lstrip()
    return lines


def _trim(lines: list[str], lead_blank: bool, strip_first: bool = False) -> tuple[list[int], str]:
    """Drop blank lines at both ends (and, for a pty, the first line's indent)."""
    lo, hi = 0, len(lines)
    while lead_blank and lo < hi and not lines[lo].strip():
        lo += 1
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    kept = lines[lo:hi]
    if kept and strip_first:
        kept[0] = kept[0].lstrip()
    if kept:
        kept[-1] = kept[-1].rstrip()
    return list(range(lo, hi)), "\n".join(kept)


def _cut(raw: str, parts: list[str]) -> tuple[list[int], str] | None:
    """A head/tail cut: the recorded head and tail must be the raw output's prefix and
    suffix (the adapter may have dropped a newline at either side of the notice)."""
    head, tail = parts
    head_n = _prefix_len(raw, head)
    tail_n = _suffix_len(raw, tail)
    if head_n is None or tail_n is None or head_n + tail_n > len(raw):
        return None
    starts = []
    pos = 0
    for line in lines_of(raw):
        starts.append((pos, pos + len(line)))
        pos += len(line)
    cut_from, cut_to = head_n, len(raw) - tail_n
    keep = [k for k, (a, b) in enumerate(starts) if a < cut_from or b > cut_to]
    return keep, "cut"


def _prefix_len(raw: str, head: str) -> int | None:
    for cand in (head, head + "\n", head.lstrip("\n")):
        if raw.startswith(cand):
            return len(cand)
    return None


def _suffix_len(raw: str, tail: str) -> int | None:
    # the adapter's pattern keeps the template's newline after the tail
    for cand in (tail, tail.removesuffix("\n"), tail + "\n", tail.rstrip("\n") + "\n",
                 tail.rstrip("\n")):
        if raw.endswith(cand):
            return len(cand)
    return None
