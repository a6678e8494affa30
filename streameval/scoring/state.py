"""Incremental ContextBench metrics for one instance (docs/metrics.md sections 3, 4, 4b, 5).

An agent run is scored while it runs: every Step is folded into a running union, and
the numbers a scrape or a record needs are kept as running sums. Adding a step costs
what the step adds (``IntervalSet.add`` hands back only the newly covered pieces, and
only those are measured against the gold), never the length of the run so far, so a
10,000-step trace costs about ten times a 1,000-step one (DESIGN.md, "Incremental").

``state.py`` knows nothing of trace formats, disk layout or Prometheus: Steps arrive
with repo-relative paths and base-commit line ranges (docs/metrics.md §2 resolution
happened upstream); the RepoView gives bytes, the SymbolIndex definitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streameval.intervals import IntervalSet, canonical, interval
from streameval.model import GRANULARITIES, Step
from streameval.sane import MAX_LINE, line
from streameval.scoring.f1 import f1
from streameval.sources.symbols import Definition

if TYPE_CHECKING:  # symbols.py loads tree-sitter: imported only where it is used
    from streameval.sources.gold import GoldInstance, GoldSpan
    from streameval.sources.repo import RepoView
    from streameval.sources.symbols import Definition, SymbolIndex

__all__ = ["GranularityNumbers", "Snapshot", "InstanceState"]

#: Version of the ``to_dict`` layout; ``from_dict`` refuses others.
STATE_FORMAT = 1


@dataclass(slots=True)
class GranularityNumbers:
    """Current numbers of one granularity (P = the final context so far, G = gold)."""

    coverage: float
    precision: float
    intersection: int
    gold_size: int
    pred_size: int
    auc_coverage: float
    redundancy: float
    step_sum: int  # Σ_t |step t|

    @property
    def f1(self) -> float:
        """docs/metrics.md §3: ``scoring.f1`` of this coverage and precision."""
        return f1(self.coverage, self.precision)


@dataclass(slots=True)
class Snapshot:
    """What the exporter and abort policies read, cheap to take at any time."""

    num_steps: int
    granularities: dict[str, GranularityNumbers]
    lines_read: int   # |union of lines read|
    bytes_read: int   # |union of bytes read|
    #: per-step (trajectory) coverage after the latest step; all 0.0 before any step
    last_step_coverage: dict[str, float] = field(default_factory=dict)
    #: True once a stated final context replaced the union of steps (docs/metrics.md §1)
    stated_final: bool = False


# --------------------------------------------------------------------------- helpers


def _ordered(a: int, b: int) -> tuple[int, int]:
    """docs/metrics.md §4b: a range with start > end means [end, start].

    Applied to every range, gold and predicted, before any other rule, so the line
    and byte granularities always see the same range.
    """
    return (b, a) if a > b else (a, b)


def _ratio(num: int, den: int) -> float:
    """docs/metrics.md §3: an empty denominator (empty G or empty P) gives 1.0."""
    return num / den if den else 1.0


@dataclass(slots=True)
class _Sets:
    """One context at every granularity: files, bytes and lines per file, definitions."""

    files: set[str] = field(default_factory=set)
    bytes: dict[str, IntervalSet] = field(default_factory=dict)
    lines: dict[str, IntervalSet] = field(default_factory=dict)
    symbols: set[Definition] = field(default_factory=set)

    def sizes(self) -> dict[str, int]:
        span = line = 0
        for s in self.bytes.values():   # (loops, not sum() of a generator: every step)
            span += s.total
        for s in self.lines.values():
            line += s.total
        return {"file": len(self.files), "symbol": len(self.symbols), "span": span, "line": line}


class _Expander:
    """Turns line ranges into bytes, lines and definitions against one repo view."""

    def __init__(self, view: RepoView, symbols: SymbolIndex | None):
        self.view = view
        self.symbols = symbols

    def byte_set(self, path: str, ranges: Iterable[tuple[int, int]],
                 merged: tuple[list[int], list[int]] | None = None) -> IntervalSet | None:
        """docs/metrics.md §3 "Line range -> bytes"; None when ``path`` is not a repo file.
        ``merged``: ``canonical(ranges)``, when the caller has it."""
        index = self.view.line_index(path)
        if index is None:
            return None
        if merged is not None and merged[0][0] > 0:
            runs = index.byte_runs(*merged)
            if runs is not None:
                return IntervalSet.of_canonical(*runs)
        return IntervalSet.from_ranges(index.byte_ranges(
            (a, b) if a <= b else (b, a) for a, b in ranges))   # _ordered, inline

    @staticmethod
    def line_set(ranges: Iterable[tuple[int, int]],
                 merged: tuple[list[int], list[int]] | None = None) -> IntervalSet:
        """docs/metrics.md §3 "Lines": raw ranges with both ends > 0, never clamped (4b).
        ``merged``: ``canonical(ranges)``, when the caller has it."""
        if merged is not None and merged[0][0] > 0 and merged[1][-1] <= MAX_LINE:
            return IntervalSet.of_canonical(*merged)
        out: list[tuple[int, int]] = []
        for a, b in ranges:
            if a > b:
                a, b = b, a    # _ordered
            # after ordering, a > 0 means both ends are; a line past any file's length
            # is brought down to sane.MAX_LINE (counted) so no size outgrows a record
            if a > 0:
                out.append((a, b) if b <= MAX_LINE else (line(a), line(b)))
        return IntervalSet.from_ranges(out)

    def overlapping(self, bytes_by_file: Mapping[str, IntervalSet]) -> set[Definition]:
        """docs/metrics.md §3: definitions sharing at least one byte with the spans."""
        if self.symbols is None:
            return set()
        out: set[Definition] = set()
        for_file, view = self.symbols.for_file, self.view
        for path, spans in bytes_by_file.items():   # (a set's bytes are never empty ones)
            starts = spans._starts
            if len(starts) == 1:   # one window (a step's usual read): asked directly
                out.update(for_file(view, path).overlapping_window(starts[0], spans._ends[0]))
            else:
                out.update(for_file(view, path).overlapping(spans))
        return out

    def named(self, names: Mapping[str, Iterable[str]]) -> set[Definition]:
        """docs/metrics.md §3: each name -> every definition so called (``a.b``: the
        whole name, else ``b``). Empty names and names that are not text name nothing;
        files that are not repo files have no definitions."""
        if self.symbols is None:
            return set()
        out: set[Definition] = set()
        for path, wanted in names.items():
            if not self.view.is_file(path):
                continue
            index = self.symbols.for_file(self.view, path)
            for name in wanted:
                if isinstance(name, str):
                    out.update(index.named(name))
        return out

    def step(self, step: Step) -> _Sets:
        """The sets of one step (or of a stated final context), merged within it.

        File level uses only ``step.files`` (4b: a path only in ``spans`` is not a
        predicted file). File and line levels need no repo and take the Step as given;
        bytes and symbols exist only for repo files. Names in ``step.symbols`` replace
        the definitions derived from the step's spans (4b).
        """
        byte_set, line_set = self.byte_set, self.line_set
        bytes_: dict[str, IntervalSet] = {}
        lines_: dict[str, IntervalSet] = {}
        line_index = self.view.line_index
        for path, ranges in step.spans.items():
            if len(ranges) == 1:
                # one window of the file (the usual read): byte_set and line_set of it,
                # inline, the calls and lists of the general case left out
                a, b = ranges[0]
                if 0 < a <= b <= MAX_LINE:
                    index = line_index(path)
                    if index is not None:
                        run = index.byte_window(a, b)
                        if run is not None:
                            bytes_[path] = interval(*run)
                        else:   # past the file's end: byte_set's general case
                            spans = IntervalSet.from_ranges(index.byte_ranges(ranges))
                            if spans._starts:
                                bytes_[path] = spans
                    lines_[path] = interval(a, b)
                    continue
            merged = canonical(ranges)
            spans = byte_set(path, ranges, merged)
            if spans is not None and spans._starts:   # (not ``if spans``: a call a file)
                bytes_[path] = spans
            lines = line_set(ranges, merged)
            if lines._starts:
                lines_[path] = lines
        return _Sets(set(step.files), bytes_, lines_,
                     self.named(step.symbols) if step.symbols else self.overlapping(bytes_))


def _gold_sets(gold: GoldInstance, expander: _Expander, warnings: list[str]) -> _Sets:
    """G at every granularity (docs/metrics.md §3): files, bytes and symbols from init+add,
    lines from init_ctx only. A gold file missing from the repo counts at file level
    (and, needing no repo, at line level) but has no bytes or symbols."""
    sets = _Sets(files={s.file for s in gold.gold_context})
    for path, ranges in _ranges_by_file(gold.gold_context).items():
        spans = expander.byte_set(path, ranges)
        if spans is None:
            warnings.append(f"gold file {path!r} is not a file of the repository at the "
                            "base commit: it counts at file level only")
        elif spans:
            sets.bytes[path] = spans
    for path, ranges in _ranges_by_file(gold.line_gold).items():
        lines = expander.line_set(ranges)
        if lines:
            sets.lines[path] = lines
    sets.symbols = expander.overlapping(sets.bytes)
    return sets


def _ranges_by_file(spans: Iterable[GoldSpan]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        out.setdefault(s.file, []).append((s.start_line, s.end_line))
    return out


class _Context:
    """A growing predicted context with |P| and |G ∩ P| kept up to date.

    ``merge`` measures only the pieces the union did not hold yet, against the gold:
    its cost is that of the merged step, whatever the size of the union.
    """

    __slots__ = ("gold", "sets", "size", "inter")

    def __init__(self, gold: _Sets):
        self.gold = gold
        self.sets = _Sets()
        self.size = dict.fromkeys(GRANULARITIES, 0)
        self.inter = dict.fromkeys(GRANULARITIES, 0)

    def merge(self, step: _Sets) -> None:
        # the files and definitions the union did not hold, found by set operations
        # (in C); only their number and their number in the gold are kept. A subset
        # test first: as a rule a step shows no new file or definition, and the test
        # makes no set
        sets, size, inter = self.sets, self.size, self.inter
        if not step.files <= sets.files:
            new_files = step.files - sets.files
            sets.files |= new_files
            size["file"] += len(new_files)
            inter["file"] += len(new_files & self.gold.files)
        if not step.symbols <= sets.symbols:
            new_symbols = step.symbols - sets.symbols
            sets.symbols |= new_symbols
            size["symbol"] += len(new_symbols)
            inter["symbol"] += len(new_symbols & self.gold.symbols)
        if step.bytes:
            self._grow("span", step.bytes, sets.bytes, self.gold.bytes)
        if step.lines:
            self._grow("line", step.lines, sets.lines, self.gold.lines)

    def _grow(self, g: str, new: dict[str, IntervalSet], union: dict[str, IntervalSet],
              gold: dict[str, IntervalSet]) -> None:
        """``merge`` of one level's per-file sets: one pass per file and step."""
        for path, spans in new.items():
            have = union.get(path)
            if have is None:
                have = union[path] = IntervalSet()
            pieces, added = have.add_set(spans)
            if added:
                self.size[g] += added
                gold_spans = gold.get(path)
                if gold_spans is not None:
                    self.inter[g] += gold_spans.overlap_sorted(pieces)

    def compact(self) -> None:
        """Keep |P| and |G ∩ P| only (a finished run's numbers): the sets go, and with
        them what a full garbage collection would walk. Nothing may be merged after."""
        self.gold = self.sets = None  # type: ignore[assignment]

    def numbers(self, gold_size: dict[str, int], g: str) -> dict[str, Any]:
        """The ``final`` block of one granularity (docs/metrics.md §4, 5): the evaluator's
        five fields, then ``f1`` (an extra field, §3)."""
        coverage = _ratio(self.inter[g], gold_size[g])
        precision = _ratio(self.inter[g], self.size[g])
        return {
            "coverage": coverage,
            "precision": precision,
            "intersection": self.inter[g],
            "gold_size": gold_size[g],
            "pred_size": self.size[g],
            "f1": f1(coverage, precision),
        }

    def to_dict(self) -> dict[str, Any]:
        s = self.sets
        return {
            "files": sorted(s.files),
            "bytes": {p: [list(iv) for iv in v] for p, v in sorted(s.bytes.items())},
            "lines": {p: [list(iv) for iv in v] for p, v in sorted(s.lines.items())},
            "symbols": [[d.file, d.kind, d.start_byte, d.end_byte, d.name]
                        for d in sorted(s.symbols)],
        }

    @classmethod
    def from_dict(cls, gold: _Sets, d: Mapping[str, Any]) -> _Context:
        """Rebuild by merging the saved sets once: sizes and intersections follow."""

        ctx = cls(gold)
        ctx.merge(_Sets(
            files=set(d["files"]),
            bytes={p: IntervalSet(map(tuple, v)) for p, v in d["bytes"].items()},
            lines={p: IntervalSet(map(tuple, v)) for p, v in d["lines"].items()},
            symbols={Definition(*row) for row in d["symbols"]},
        ))
        return ctx


def _step_to_dict(step: Step) -> dict[str, Any]:
    return {
        "files": list(step.files),
        "spans": {p: [list(r) for r in rs] for p, rs in step.spans.items()},
        "symbols": None if step.symbols is None else {p: list(n) for p, n in step.symbols.items()},
    }


def _step_from_dict(d: Mapping[str, Any]) -> Step:
    return Step(
        files=tuple(d["files"]),
        spans={p: [tuple(r) for r in rs] for p, rs in d["spans"].items()},
        symbols=None if d["symbols"] is None else {p: list(n) for p, n in d["symbols"].items()},
    )


# --------------------------------------------------------------------------- the state


class InstanceState:
    """Consumes Steps one at a time; cost per step proportional to what it adds.

    ``warnings`` lists what about the gold could not be used as given (a gold file
    missing from the repository counts at file level only).
    """

    def __init__(self, gold: GoldInstance, view: RepoView, symbols: SymbolIndex | None = None):
        self.gold = gold
        self.view = view
        self.symbols = symbols
        self.warnings: list[str] = []
        self._expander = _Expander(view, symbols)
        self._gold = _gold_sets(gold, self._expander, self.warnings)
        self._gold_size = self._gold.sizes()
        # what add_step divides by: the gold's sizes, but for lines without line gold
        self._no_line_gold = self._gold_size["line"] == 0
        self._gold_sizes = tuple((g, self._gold_size[g]) for g in GRANULARITIES
                                 if g != "line" or not self._no_line_gold)
        self._union = _Context(self._gold)
        self._stated: _Context | None = None
        self._stated_step: Step | None = None  # a copy of the stated context
        self._step_sum = dict.fromkeys(GRANULARITIES, 0)
        self._coverage_sum = dict.fromkeys(GRANULARITIES, 0.0)
        self._trajectory: list[dict[str, float]] = []

    # ------------------------------------------------------------------ updates
    @property
    def num_steps(self) -> int:
        return len(self._trajectory)

    def add_step(self, step: Step) -> dict[str, float]:
        """Add one step; return its per-step coverage by granularity.

        Per-step coverage is that of the union of steps 1..t (docs/metrics.md §4). An empty
        step still counts in ``num_steps`` and in the AUC denominator (4b).
        """
        sets = self._expander.step(step)
        step_sum = self._step_sum   # sets.sizes(), without its dict: every step
        step_sum["file"] += len(sets.files)
        step_sum["symbol"] += len(sets.symbols)
        for s in sets.bytes.values():
            step_sum["span"] += s._total   # (not the property: a call a file)
        for s in sets.lines.values():
            step_sum["line"] += s._total
        self._union.merge(sets)
        # the union's coverage, keys in GRANULARITIES order
        inter, sums = self._union.inter, self._coverage_sum
        coverage = {}
        for g, n in self._gold_sizes:
            c = coverage[g] = _ratio(inter[g], n)
            # a running sum in step order: the same float as sum(list) over the steps
            sums[g] += c
        if self._no_line_gold:
            # docs/metrics.md §4: the public evaluator's trajectory quirk (its sum stays
            # 0.0); "line" is the last granularity, so the keys keep their order
            coverage["line"] = 0.0
        self._trajectory.append(coverage)
        return dict(coverage)

    def set_final_context(self, context: Step) -> None:
        """Use a stated final context instead of the union of steps (docs/metrics.md §1).

        Only the ``final`` block changes; trajectory, AUC and redundancy stay those of
        the steps. Calling it again replaces the previous one (the last stated context
        wins). Unified predictions with no ``pred_steps`` (docs/metrics.md §4b): the caller
        also passes the final context as the one step, ``add_step(context)``, so that
        ``num_steps`` is 1 and the trajectory is that step.
        """
        stated = _Context(self._gold)
        stated.merge(self._expander.step(context))
        self._stated = stated
        self._stated_step = _step_from_dict(_step_to_dict(context))  # the caller may reuse it

    # ------------------------------------------------------------------ reading
    @property
    def _final(self) -> _Context:
        return self._stated if self._stated is not None else self._union

    @property
    def last_step_coverage(self) -> dict[str, float]:
        """Per-step coverage after the latest step (0.0 everywhere before any step)."""
        if not self._trajectory:
            return dict.fromkeys(GRANULARITIES, 0.0)
        return dict(self._trajectory[-1])

    @property
    def final_context_empty(self) -> bool:
        """True when the final context holds nothing at any granularity.

        For the unified format this is the evaluator's ``no_context_extracted``
        case (docs/metrics.md §4b); a live run that read nothing is still scored.
        """
        return not any(self._final.size.values())

    def auc_coverage(self, g: str) -> float:
        """docs/metrics.md §4: mean of per-step coverage, 0 with no steps."""
        n = len(self._trajectory)
        return self._coverage_sum[g] / n if n else 0.0

    def redundancy(self, g: str) -> float:
        """docs/metrics.md §4: 1 - |union of all steps| / Σ_t |step t|, 0 when the sum is 0."""
        total = self._step_sum[g]
        return 1 - self._union.size[g] / total if total else 0.0

    def snapshot(self) -> Snapshot:
        """Current numbers; O(1) in the length of the run (called at every scrape)."""
        final = self._final
        grans = {}
        for g in GRANULARITIES:
            f = final.numbers(self._gold_size, g)
            grans[g] = GranularityNumbers(
                coverage=f["coverage"], precision=f["precision"],
                intersection=f["intersection"], gold_size=f["gold_size"],
                pred_size=f["pred_size"], auc_coverage=self.auc_coverage(g),
                redundancy=self.redundancy(g), step_sum=self._step_sum[g])
        return Snapshot(
            num_steps=self.num_steps, granularities=grans,
            lines_read=self._union.size["line"], bytes_read=self._union.size["span"],
            last_step_coverage=self.last_step_coverage, stated_final=self._stated is not None)

    def record(self, patch: str | None = None) -> dict:
        """The docs/metrics.md §5 record, keys in that order; floats unrounded.

        The ``editloc`` key is there only when a non-empty patch is given: no patch,
        no EditLoc (docs/metrics.md §4, unlike the public evaluator).
        """
        final = self._final
        rec: dict[str, Any] = {
            "instance_id": self.gold.instance_id,
            "num_steps": self.num_steps,
            "final": {g: final.numbers(self._gold_size, g) for g in GRANULARITIES},
            "trajectory": {
                "steps": [{"step": i, "coverage": dict(c)}
                          for i, c in enumerate(self._trajectory, start=1)],
                # the running sum is added left to right, as the evaluator's sum() on
                # 3.11 (streameval.scoring.sums): the same number on every Python
                "auc_coverage": {g: self.auc_coverage(g) for g in GRANULARITIES},
                "redundancy": {g: self.redundancy(g) for g in GRANULARITIES},
            },
        }
        if patch and patch.strip():
            from streameval.scoring.editloc import editloc

            result = editloc(patch, self.gold)
            if result is not None:
                rec["editloc"] = result
        return rec

    def compact(self) -> None:
        """Keep the numbers only, for a run whose record is written (``RunSession.
        release_reading``): its sums, sizes and per-step curve stay, as plain values the
        garbage collector does not walk (a tuple of dicts of floats); the gold's and the
        union's sets, and the repository view's expander, go. A kept finished run so
        holds a few objects, not some fifty (issue 27: a full collection of 1,000 kept
        runs took 150-200 ms). ``snapshot`` and ``record`` answer as before; no step may
        be added, and there is no checkpoint of it (``to_dict``)."""
        if self._expander is None:
            return
        self._expander = None  # type: ignore[assignment]
        self._gold = None  # type: ignore[assignment]
        self._union.compact()
        if self._stated is not None:
            self._stated.compact()
        self._trajectory = tuple(self._trajectory)  # type: ignore[assignment]

    # ------------------------------------------------------------------ checkpoints
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data to resume from after a restart (see ``from_dict``).

        Holds the union's sets, the running sums and the per-step coverage; the gold
        is not stored: it is recomputed from the GoldInstance and the repo. Costs the
        size of the union (a checkpoint is periodic, not per step).
        """
        if self._expander is None:
            raise ValueError("a compacted state keeps no sets to save")
        return {
            "format": STATE_FORMAT,
            "instance_id": self.gold.instance_id,
            "union": self._union.to_dict(),
            "step_sum": dict(self._step_sum),
            "coverage_sum": dict(self._coverage_sum),
            "trajectory": [[c[g] for g in GRANULARITIES] for c in self._trajectory],
            "stated_final": None if self._stated_step is None else _step_to_dict(self._stated_step),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], gold: GoldInstance, view: RepoView,
                  symbols: SymbolIndex | None = None) -> InstanceState:
        """Resume a state saved by ``to_dict`` for the same instance.

        Raises ValueError when the data is of another format or another instance.
        """
        if d.get("format") != STATE_FORMAT:
            raise ValueError(f"state checkpoint format {d.get('format')!r} is not {STATE_FORMAT}")
        if d.get("instance_id") != gold.instance_id:
            raise ValueError(f"state checkpoint is for instance {d.get('instance_id')!r}, "
                             f"not {gold.instance_id!r}")
        state = cls(gold, view, symbols)
        state._union = _Context.from_dict(state._gold, d["union"])
        state._step_sum = {g: int(d["step_sum"][g]) for g in GRANULARITIES}
        state._coverage_sum = {g: float(d["coverage_sum"][g]) for g in GRANULARITIES}
        state._trajectory = [dict(zip(GRANULARITIES, row, strict=True)) for row in d["trajectory"]]
        if d["stated_final"] is not None:
            state.set_final_context(_step_from_dict(d["stated_final"]))
        return state
