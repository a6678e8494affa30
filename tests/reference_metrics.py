"""A deliberately naive recomputation of docs/metrics.md sections 3, 4, 4b and 5.

Used only by tests, as the oracle ``streameval.scoring.state`` is checked against. Everything is
a plain Python set of units -- files, ``(file, byte)``, ``(file, line)``, definitions --
and every per-step number is recomputed from *all* steps so far. Slow on purpose: it
shares no code with ``state.py`` or ``intervals.py``; line -> byte offsets are computed
here from the file contents, straight from the rule book. Only the definitions of a
file (which tree-sitter nodes exist, and what they are called) come from outside,
through ``symbols_of(path)`` returning an object with ``.definitions`` and ``.named()``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import reduce
from typing import Any

from streameval.model import Step

GRANULARITIES = ("file", "symbol", "span", "line")


def ordered(a: int, b: int) -> tuple[int, int]:
    """4b: a range with start > end is [end, start]."""
    return (b, a) if a > b else (a, b)


def line_bytes(data: bytes, start: int, end: int) -> set[int]:
    """Section 3, "Line range -> bytes", word for word."""
    off = [0] + [i + 1 for i, c in enumerate(data) if c == 0x0A]  # off[k-1] = start of line k
    if not data:  # "an empty file gives [0, 0]": whatever the range (as repo.py reads it)
        return {0}
    start = max(1, start)
    end = max(start, end)
    if start > len(off):  # a start past the last line start is dropped
        return set()
    first = off[start - 1]
    last = len(data) - 1 if end >= len(off) else off[end] - 1
    return set(range(first, last + 1))


def step_units(step: Step, contents: Mapping[str, bytes],
               symbols_of: Callable[[str], Any] | None) -> dict[str, set]:
    """The units of one step (or stated final context) at every granularity."""
    files = set(step.files)
    spans: set[tuple[str, int]] = set()
    lines: set[tuple[str, int]] = set()
    for path, ranges in step.spans.items():
        for a, b in ranges:
            a, b = ordered(a, b)
            if path in contents:
                spans |= {(path, x) for x in line_bytes(contents[path], a, b)}
            if a > 0 and b > 0:
                lines |= {(path, n) for n in range(a, b + 1)}
    if symbols_of is None:
        syms: set = set()
    elif step.symbols:  # 4b: names replace the definitions derived from spans
        syms = {d for path, names in step.symbols.items() if path in contents
                for n in names if n.strip().rsplit(".", 1)[-1]
                for d in symbols_of(path).named(n.strip().rsplit(".", 1)[-1])}
    else:
        syms = overlapping(spans, contents, symbols_of)
    return {"file": files, "symbol": syms, "span": spans, "line": lines}


def overlapping(spans: set[tuple[str, int]], contents: Mapping[str, bytes],
                symbols_of: Callable[[str], Any]) -> set:
    """Definitions sharing at least one byte with the set of (file, byte)."""
    out = set()
    for path in {p for p, _ in spans}:
        for d in symbols_of(path).definitions:
            if any((path, x) in spans for x in range(d.start_byte, d.end_byte + 1)):
                out.add(d)
    return out


def gold_units(init: Sequence[tuple[str, int, int]], add: Sequence[tuple[str, int, int]],
               contents: Mapping[str, bytes],
               symbols_of: Callable[[str], Any] | None) -> dict[str, set]:
    everything = Step(files=(), spans=_spans(list(init) + list(add)))
    g = step_units(everything, contents, None)
    return {
        "file": {f for f, _, _ in list(init) + list(add)},
        "span": g["span"],
        "line": step_units(Step(spans=_spans(init)), contents, None)["line"],
        "symbol": set() if symbols_of is None else overlapping(g["span"], contents, symbols_of),
    }


def _spans(items: Iterable[tuple[str, int, int]]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for f, a, b in items:
        out.setdefault(f, []).append((a, b))
    return out


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0


def record(instance_id: str, init: Sequence[tuple[str, int, int]],
           add: Sequence[tuple[str, int, int]], steps: Sequence[Step],
           contents: Mapping[str, bytes], symbols_of: Callable[[str], Any] | None = None,
           final: Step | None = None) -> dict:
    """The section 5 record (without editloc), recomputed naively."""
    gold = gold_units(init, add, contents, symbols_of)
    per_step = [step_units(s, contents, symbols_of) for s in steps]
    trajectory = []
    for t in range(1, len(per_step) + 1):
        union = {g: set().union(*(u[g] for u in per_step[:t])) for g in GRANULARITIES}
        cov = {g: _ratio(len(gold[g] & union[g]), len(gold[g])) for g in GRANULARITIES}
        if not gold["line"]:
            cov["line"] = 0.0  # section 4 quirk, trajectory only
        trajectory.append({"step": t, "coverage": cov})
    union = {g: set().union(*(u[g] for u in per_step)) for g in GRANULARITIES}
    pred = step_units(final, contents, symbols_of) if final is not None else union
    n = len(per_step)
    final_block = {}
    for g in GRANULARITIES:
        cov = _ratio(len(gold[g] & pred[g]), len(gold[g]))
        prec = _ratio(len(gold[g] & pred[g]), len(pred[g]))
        final_block[g] = {"coverage": cov, "precision": prec,
                          "intersection": len(gold[g] & pred[g]), "gold_size": len(gold[g]),
                          "pred_size": len(pred[g]),
                          # the harmonic mean; 0 when both are 0 (ContextBench leaves it open)
                          "f1": 2 * cov * prec / (cov + prec) if cov + prec > 0 else 0.0}
    sums = {g: sum(len(u[g]) for u in per_step) for g in GRANULARITIES}
    return {
        "instance_id": instance_id,
        "num_steps": n,
        "final": final_block,
        "trajectory": {
            "steps": trajectory,
            # one float addition after another, as the evaluator's sum() on CPython 3.11
            "auc_coverage": {g: (reduce(operator.add, (c["coverage"][g] for c in trajectory), 0.0) / n
                                 if n else 0.0)
                             for g in GRANULARITIES},
            "redundancy": {g: (1 - len(union[g]) / sums[g] if sums[g] else 0.0)
                           for g in GRANULARITIES},
        },
    }
