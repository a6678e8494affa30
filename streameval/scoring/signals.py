"""The per-run signals that need no gold (docs/outcomes.md §2), stated once.

Live abort policies, the record, the page and the outcome analysis all read these
numbers, so each is defined here and nowhere else: what a run has done so far (steps,
tool calls, spend, files read, what it saw again, what it repeated, tests, edits), which
a fleet without gold has for every run. With gold, the analysis also reads the gold
metrics the record already carries (coverage, precision, F1, AUC, the first gold read);
at step k those come from the checkpoints below.

``RunSignals`` is fed by ``session.RunSession`` after every tool call and every step. Its
work is O(1) per call (one hash of the call's input) and O(files of the step) per step;
it keeps one entry per distinct call and per file shown (dropped by ``release`` once a
finished run's record is written). What was known *at step k* is kept for the steps of
``is_checkpoint`` (5, 10, 15, 20, 30, 40, 60, 80, ...: two points per doubling), so a
record holds O(log steps) of them; ``values_at`` reads a record's signals at one of them,
or at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields
from typing import Any, Protocol

import orjson

from streameval.model import GRANULARITIES, Step, ToolCall

__all__ = ["CHECKPOINT_BASES", "GOLD_SIGNALS", "SIGNALS", "RunSignals", "SignalValues",
           "checkpoint_steps", "gold_row", "is_checkpoint", "values_at"]

#: the checkpoints are these numbers times a power of two
CHECKPOINT_BASES: tuple[int, ...] = (5, 15)
#: what the gold adds at a checkpoint, by ``report.fields`` names
GOLD_MEASURES: tuple[str, ...] = ("coverage", "precision", "f1", "auc")
GOLD_SIGNALS: tuple[str, ...] = (
    *(f"{g}.{m}" for g in GRANULARITIES for m in GOLD_MEASURES),
    "first_gold_file_step", "first_gold_line_step")


def is_checkpoint(step: int) -> bool:
    """Whether the signals at ``step`` are kept: 5·2^i or 15·2^i (i >= 0)."""
    if step < _CHECKPOINT_LIMIT:   # every step of a run asks: a set lookup
        return step in _CHECKPOINTS
    for base in CHECKPOINT_BASES:
        q, r = divmod(step, base)
        if r == 0 and q > 0 and q & (q - 1) == 0:
            return True
    return False


_CHECKPOINT_LIMIT = 1 << 40
_CHECKPOINTS = frozenset(b << i for b in CHECKPOINT_BASES for i in range(40)
                         if b << i < _CHECKPOINT_LIMIT)


def checkpoint_steps(last: int) -> list[int]:
    """The checkpoints up to step ``last``, in order."""
    out = sorted(b << i for b in CHECKPOINT_BASES for i in range(max(1, last).bit_length())
                 if b << i <= last)
    return list(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class SignalValues:
    """A run's gold-free signals at one moment (docs/outcomes.md §2 defines each)."""

    steps: int
    tool_calls: int
    #: what the trace had reported by then; None before it reported any
    tokens: int | None
    cost_usd: float | None
    files_read: int
    #: §4's line redundancy: None without the repository (lines need the base text)
    reread_share: float | None
    #: the share of the files steps read that an earlier step had read
    redundancy: float
    repeated_calls: int
    max_repeats: int
    steps_since_new_file: int
    test_runs: int
    edits: int


#: the gold-free signals, in record order
SIGNALS: tuple[str, ...] = tuple(f.name for f in fields(SignalValues))


class Counts(Protocol):
    """What the session counts anyway (``session.RunExtras``): read, never counted twice."""

    tool_calls: int
    edits: int
    categories: Mapping[str, int]


class RunSignals:
    """The signals of one run, kept as it goes (see the module's docstring)."""

    __slots__ = ("steps", "_calls", "_repeated", "_max_repeats", "_files", "_files_read",
                 "_read_sum", "_new_file_step", "checkpoints")

    def __init__(self) -> None:
        self.steps = 0
        self._calls: dict[int, int] = {}     # hash of (tool, input) -> times made
        self._repeated = 0
        self._max_repeats = 0
        self._files: set[str] = set()        # files some line of which was shown
        self._files_read = 0
        self._read_sum = 0                   # Σ_t |files step t showed lines of|
        self._new_file_step = 0
        #: (step, gold-free values, gold values or None) at each checkpoint
        self.checkpoints: list[tuple[int, SignalValues, tuple | None]] = []

    def on_call(self, call: ToolCall) -> None:
        """A tool call of the run (not a sub-agent's): is it one made before?"""
        n = self._calls.get(key := _call_key(call), 0) + 1
        self._calls[key] = n
        self._repeated += n > 1
        self._max_repeats = max(self._max_repeats, n)

    def on_step(self, step: Step) -> None:
        """A step: the files it showed lines of (a listing names files and reads none),
        one never read before among them or not."""
        self.steps += 1
        files = self._files
        for f, ranges in step.spans.items():
            if ranges:
                self._read_sum += 1
                if f not in files:
                    files.add(f)
                    self._files_read += 1
                    self._new_file_step = self.steps

    def values(self, counts: Counts, tokens: int | None, cost: float | None,
               reread_share: float | None) -> SignalValues:
        """The signals now; ``reread_share`` is the line granularity's redundancy when
        the run is measured against its repository (``InstanceState``), else None."""
        return SignalValues(
            steps=self.steps, tool_calls=counts.tool_calls, tokens=tokens, cost_usd=cost,
            files_read=self._files_read, reread_share=reread_share,
            redundancy=1 - self._files_read / self._read_sum if self._read_sum else 0.0,
            repeated_calls=self._repeated, max_repeats=self._max_repeats,
            steps_since_new_file=self.steps - self._new_file_step,
            test_runs=counts.categories.get("test", 0), edits=counts.edits)

    def keep(self, values: SignalValues, gold: tuple | None) -> None:
        """The values at a checkpoint step (the session asks ``is_checkpoint`` first)."""
        self.checkpoints.append((values.steps, values, gold))

    def release(self) -> None:
        """Forget what only counting more needs: the run's numbers stay."""
        self._calls = {}
        self._files = set()

    def record(self, final: SignalValues) -> dict[str, Any]:
        """The record's ``signals`` block: the values at the end, then ``at_step``, one
        list per signal over the checkpoint steps (gold ones where the run has gold)."""
        block: dict[str, Any] = dict(zip(SIGNALS, astuple(final), strict=True))
        rows = [astuple(v) for _k, v, _g in self.checkpoints]
        at: dict[str, list] = {"step": [k for k, _v, _g in self.checkpoints]}
        at.update((name, [row[i] for row in rows]) for i, name in enumerate(SIGNALS)
                  if name != "steps")
        if self.checkpoints and self.checkpoints[0][2] is not None:
            at.update((name, [g[i] for _k, _v, g in self.checkpoints])
                      for i, name in enumerate(GOLD_SIGNALS))
        block["at_step"] = at
        return block


def gold_row(scores: Any, first_file: int | None, first_line: int | None) -> tuple:
    """The gold signals at a checkpoint, ``GOLD_SIGNALS`` order (``state.Snapshot``: the
    context so far, as the ``final`` block would have it then)."""
    out: list[Any] = []
    for g in GRANULARITIES:
        n = scores.granularities[g]
        out += [n.coverage, n.precision, n.f1, n.auc_coverage]
    return (*out, first_file, first_line)


def _call_key(call: ToolCall) -> int:
    """Two calls are the same when their tool (any case) and input are: the input as
    canonical JSON (keys sorted), hashed."""
    try:
        text = orjson.dumps(call.input, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = repr(call.input).encode()
    return hash((call.tool.lower(), text))


def values_at(record: Mapping[str, Any], step: int | None = None) -> dict[str, Any] | None:
    """A record's signals by name (``SIGNALS``, and ``GOLD_SIGNALS`` for a run measured
    against gold): at the end (``step`` None), or at a checkpoint ``step``. None when
    the record has no signals (an error record, an older record), or the run has no
    such checkpoint (it ended before, or ``step`` is not one: ``is_checkpoint``)."""
    block = record.get("signals")
    if not isinstance(block, Mapping):
        return None
    if step is None:
        out = {name: block.get(name) for name in SIGNALS}
        out.update(_final_gold(record))
        return out
    at = block.get("at_step") or {}
    steps = at.get("step") or []
    if step not in steps:
        return None
    i = steps.index(step)
    out: dict[str, Any] = {name: (at[name][i] if name in at else None)
                           for name in (*SIGNALS, *GOLD_SIGNALS)}
    out["steps"] = step
    return out


def _final_gold(record: Mapping[str, Any]) -> dict[str, Any]:
    """The gold signals at the end: the record's own fields (docs/metrics.md §5)."""
    final, traj = record.get("final"), record.get("trajectory")
    out: dict[str, Any] = dict.fromkeys(GOLD_SIGNALS)
    if isinstance(final, Mapping) and isinstance(traj, Mapping):
        for g in GRANULARITIES:
            block = final.get(g) or {}
            out[f"{g}.coverage"] = block.get("coverage")
            out[f"{g}.precision"] = block.get("precision")
            out[f"{g}.f1"] = block.get("f1")
            out[f"{g}.auc"] = (traj.get("auc_coverage") or {}).get(g)
    out["first_gold_file_step"] = record.get("first_gold_file_step")
    out["first_gold_line_step"] = record.get("first_gold_line_step")
    return out
