"""Reads as the runs of lines they show, for comparing with expected runs.

A numbered output is ONE read per file, however scattered its numbers (grep hits);
tests state what was shown as runs of consecutive lines, one ``Read(path, a, b)`` each.
"""

from __future__ import annotations

from streameval.model import Read
from streameval.reading.output.numbered import numbered_runs


def runs_of(reads: list[Read]) -> list[Read]:
    out: list[Read] = []
    for r in reads:
        numbers = r.shown.numbers if r.shown is not None else None
        if numbers and not r.listing:
            out.extend(Read(r.path, a, b) for a, b in numbered_runs(numbers))
        else:
            out.append(r)
    return out
