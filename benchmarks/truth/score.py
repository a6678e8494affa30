"""streameval's credit of a call against the replayed truth, line by line, with causes.

Credited: the base-commit lines ``StepBuilder.consume`` put in the call's reads (fed the
run's calls in order, over a real ``GitRepo`` view of the base commit, as ``replay`` and
``watch`` do). Truth: the base lines whose ids the shown output carried. A checkable
read call is *exact* when the two sets of (path, base line) are equal.

A false credit is classed by what the call showed:

- ``wrong file``: the call showed no line of that file (it showed others);
- ``wrong place``: it showed lines of that file, not this one; sub-causes: a line the
  agent wrote with this text was shown, and the base line is gone from the file
  (``re-created in place``) or still elsewhere in it (``taken for a base line
  elsewhere``); another shown base line has this text (``displaced among identical base
  lines``); the base line was deleted by the agent; or other;
- ``never shown``: the call showed no line of any file;
- and apart: ``printed, but hidden by the harness``: the command printed the line but
  the harness did not show it (a blank line Claude Code or OpenHands trimmed at an
  edge of the output, a line in the elided middle of a cut output).

A missed line (shown, not credited) by cause: the call credited nothing of that file
(``file not credited``), a line at a harness cut, a blank line, a line whose text is
repeated in its base file, or other.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from streameval.reading.steps import CallOutcome
from truth.replay import CallTruth

Line = tuple[str, int]


def credited(outcome: CallOutcome) -> set[Line]:
    out: set[Line] = set()
    for r in outcome.reads:
        if r.repo_path is None or r.listing:
            continue
        for a, b in r.base:
            out.update((r.repo_path, n) for n in range(a, b + 1))
    return out


def ranges(lines: set[Line]) -> dict[str, str]:
    """``{path: "3-9,12"}``: a set of lines as the examples print it."""
    per: dict[str, list[int]] = {}
    for p, n in lines:
        per.setdefault(p, []).append(n)
    out = {}
    for p, ns in sorted(per.items()):
        out[p] = line_ranges(sorted(ns))
    return out


class BaseLines:
    """Base-commit text of files, for classifying (read through streameval's view)."""

    def __init__(self, view):
        self.view = view
        self.cache: dict[str, list[str] | None] = {}
        self.counts: dict[str, Counter[str]] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self.cache:
            data = self.view.read(path) if self.view is not None else None
            self.cache[path] = None if data is None else \
                data.decode("utf-8", errors="replace").split("\n")
        return self.cache[path]

    def text(self, path: str, n: int) -> str | None:
        lines = self.lines(path)
        return lines[n - 1].rstrip() if lines is not None and 0 < n <= len(lines) else None

    def repeated(self, path: str, n: int) -> bool:
        lines = self.lines(path)
        if lines is None:
            return False
        if path not in self.counts:
            self.counts[path] = Counter(ln.rstrip() for ln in lines)
        text = self.text(path, n)
        return text is not None and self.counts[path][text] > 1


@dataclass
class CallScore:
    """One checkable read call scored."""

    exact: bool
    credited: set[Line]
    truth: set[Line]
    agent_lines: int
    false: Counter[str] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)


def score_call(truth: CallTruth, outcome: CallOutcome, base: BaseLines) -> CallScore:
    cred = credited(outcome)
    real = {(o.path, o.line) for o in truth.origins if o.line is not None}
    agent = sum(1 for o in truth.origins if o.line is None)
    files = {o.path for o in truth.origins}
    sc = CallScore(cred == real, cred, real, agent)
    for p, n in cred - real:
        sc.false[_false_class(p, n, real, files, truth, base)] += 1
    credited_files = {p for p, _ in cred}
    edges = {(o.path, o.line) for o in truth.cut_edges}
    for p, n in real - cred:
        if p not in credited_files:
            cause = "file not credited"
        elif (p, n) in edges:
            cause = "cut edge"
        elif not (base.text(p, n) or "").strip():
            cause = "blank line"
        elif base.repeated(p, n):
            cause = "repeated line"
        else:
            cause = "other"
        sc.missed[cause] += 1
    return sc


#: a line-number prefix a reader prints before the text (``nl``, ``cat -n``, ``grep -n``)
_PREFIX = re.compile(r"^(?:\s*\d+\t|\d+[:-]|[^\s:]+[:-]\d+[:-]|[^\s:]+:)")


def content(output_line: str) -> str:
    return _PREFIX.sub("", output_line, count=1).strip()


def _false_class(p: str, n: int, real: set[Line], files: set[str], truth: CallTruth,
                 base: BaseLines) -> str:
    if any(o.path == p and o.line == n for o in truth.hidden):
        return "printed, but hidden by the harness"
    if not files:
        return "never shown"
    if p not in files:
        return "wrong file"
    text = (base.text(p, n) or "").strip()
    agent = {content(t) for o, t in zip(truth.origins, truth.texts)
             if o.line is None and o.path == p}
    gone = p in truth.present and n not in truth.present[p]
    if text in agent or (text and any(a.endswith(text) for a in agent)):
        return "wrong place: the agent's line, re-created in place" if gone else \
            "wrong place: the agent's line, taken for a base line elsewhere"
    if any(q == p and (base.text(q, m) or "").strip() == text for q, m in real):
        return "wrong place: displaced among identical base lines"
    return "wrong place: a base line the agent deleted" if gone else "wrong place: other"


def line_ranges(ns: list[int]) -> str:
    """Sorted line numbers as ``"3-9,12"``."""
    spans: list[list[int]] = []
    for n in ns:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
