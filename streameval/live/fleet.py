"""Fleet aggregates: how each agent, model and experiment is doing now, in a bounded
number of series however many runs pass through ``watch``.

Per-run series answer "how is this run doing"; with 10,000 runs they are 10,000 label
sets per family, and nothing says how a model does on average. The fleet families are
labelled by ``agent``, ``model`` and ``experiment`` only, and are folded at scrape time
from what each run's last export kept (``FleetEntry``), so they cost no work on the
watcher's hot path and follow the run table exactly: a run counts while it is in
memory (active, or finished within ``--keep-finished`` and ``--max-runs``).

The numbers are those of ``report.fields.METRICS``, read by the same getters from a
record-shaped view of the run's snapshot, so a mean here and an arm's mean in
``streameval compare`` are the same rule under the same name (``line.coverage``,
``file.mrr``, ``cost_usd``). Each mean is over the finished runs that have the number,
and the count it is over is exported beside it: a run whose trace states no usage is
left out of the token mean, never counted as 0.

Label values come from traces, which are untrusted: a new model name per run would
make the label sets unbounded. At most ``max_groups`` label sets are exported, each
kept while it has runs in memory, admitted in the order they are first seen; runs of
any other label set are counted under ``agent="other", model="other",
experiment="other"``, and how many were is exported (``streameval_fleet_folded_runs``).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streameval.model import GRANULARITIES
from streameval.report.fields import RESOLVED, Metric, metric
from streameval.scoring.localisation import K_VALUES, NDCG_K
from streameval.scoring.snapshot import RunSnapshot, token_counts

#: label sets exported at most (besides ``other``)
MAX_GROUPS = 100
#: the label values runs beyond ``MAX_GROUPS`` label sets are counted under
OTHER = "other"
OTHER_GROUP: tuple[str, str, str] = (OTHER, OTHER, OTHER)
GROUP_LABELS = ("agent", "model", "experiment")

#: the numbers averaged over finished runs, by their ``report.fields`` names
FLEET_METRIC_NAMES: tuple[str, ...] = (
    *(f"{g}.coverage" for g in GRANULARITIES),
    *(f"{g}.f1" for g in GRANULARITIES),
    *(f"{g}.auc" for g in GRANULARITIES),
    *(f"file.recall@{k}" for k in K_VALUES),
    "file.mrr", f"file.ndcg@{NDCG_K}",
    "first_gold_file_step", "full_file_coverage_step", "steps",
    "tokens", "cost_usd",
    # the solve rate: the mean of 0/1 outcomes over the finished runs that have one
    RESOLVED.name,
)
FLEET_METRICS: tuple[Metric, ...] = tuple(RESOLVED if n == RESOLVED.name else metric(n)
                                          for n in FLEET_METRIC_NAMES)

#: family name -> help (merged into ``exporter.HELP``, which the README table follows)
HELP: dict[str, str] = {
    "streameval_fleet_runs": "Runs in memory by agent, model, experiment and state (active, finished).",
    "streameval_fleet_mean": "Mean of a per-run number (metric: report.fields names) over the finished runs in memory that have it.",
    "streameval_fleet_mean_runs": "How many finished runs each streameval_fleet_mean is over (0: none has the number).",
    "streameval_fleet_aborted_runs": "Runs in memory an abort policy decided on (dry runs included), by policy.",
    "streameval_fleet_groups": "Label sets (agent, model, experiment) exported by the fleet families, other not counted.",
    "streameval_fleet_groups_limit": "Label sets the fleet families export at most; the rest are counted under other.",
    "streameval_fleet_folded_runs": "Runs in memory counted under agent/model/experiment=\"other\" because the label-set limit was reached.",
    "streameval_fleet_folded_groups": "Distinct label sets counted under other because the limit was reached.",
    "streameval_per_run_series_limit": "Runs whose per-run series are exported at most (--per-run-series; newest active first).",
    "streameval_per_run_series_dropped_runs": "Runs in memory whose per-run series are not exported because of --per-run-series, by state.",
}

Group = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class FleetEntry:
    """What the fleet families need of one run, taken with its per-run rows (under the
    table lock, only when the run moved): its label set, the abort policies that
    decided on it, and, once it finished, its numbers in ``FLEET_METRICS`` order."""

    group: Group
    aborted: tuple[str, ...]
    #: None for an active run; a None inside: the run does not have that number
    values: tuple[float | None, ...] | None


def record_view(snap: RunSnapshot) -> dict[str, Any]:
    """The part of a run's record (docs/metrics.md §5) that ``FLEET_METRICS`` read,
    built from its snapshot, so the getters of ``report.fields`` apply unchanged.

    A run that cannot be scored has no scores, steps or localisation (its record is an
    error record), but its tokens, cost and outcome are what its trace and ``--outcomes``
    state and stay; a run measured against no gold has its steps too."""
    view: dict[str, Any] = {"tokens": token_counts(snap.tokens), "cost_usd": snap.cost_usd,
                            "resolved": snap.identity.resolved}
    scores = snap.scores
    if snap.error is None:
        view["num_steps"] = snap.num_steps
    if scores is None or snap.error is not None:
        return view
    grans = scores.granularities
    first = snap.first_gold
    view.update({
        "final": {g: {"coverage": n.coverage, "precision": n.precision, "f1": n.f1}
                  for g, n in grans.items()},
        "trajectory": {"auc_coverage": {g: n.auc_coverage for g, n in grans.items()},
                       "redundancy": {g: n.redundancy for g, n in grans.items()}},
        "first_gold_file_step": first.file_step,
        "first_gold_line_step": first.line_step,
        "first_gold_file_seconds": first.file_seconds,
        "localisation": snap.localisation,
    })
    return view


def fleet_entry(snap: RunSnapshot, group: Group, finished: bool,
                aborted: Mapping[str, str]) -> FleetEntry:
    """The run's entry; ``group`` is its exported (length-capped) label values."""
    values = None
    if finished:
        view = record_view(snap)
        values = tuple(m.value(view) for m in FLEET_METRICS)
    return FleetEntry(group, tuple(sorted(aborted)), values)


@dataclass(slots=True)
class _Sums:
    """One label set's counts, folded over its runs at one scrape."""

    active: int = 0
    finished: int = 0
    aborted: Counter | None = None
    rows: list | None = None   # the finished runs' value tuples

    def add(self, entry: FleetEntry) -> None:
        if entry.values is None:
            self.active += 1
        else:
            self.finished += 1
            if self.rows is None:
                self.rows = []
            self.rows.append(entry.values)
        if entry.aborted:
            if self.aborted is None:
                self.aborted = Counter()
            self.aborted.update(entry.aborted)


#: the labelled fleet families in exposition order: (name, the label beside the group's)
FLEET_FAMILIES: tuple[tuple[str, str], ...] = (
    ("streameval_fleet_runs", "state"),
    ("streameval_fleet_mean", "metric"),
    ("streameval_fleet_mean_runs", "metric"),
    ("streameval_fleet_aborted_runs", "policy"),
)
#: one sample: (agent, model, experiment, the family's own label), value
Sample = tuple[tuple[str, str, str, str], float]


@dataclass(slots=True)
class FleetNumbers:
    """One scrape's fleet: the labelled families' samples (rendered as text by
    ``exposition``, or as prometheus_client families by ``families``) and the counts
    that say how bounded they are."""

    samples: dict[str, list[Sample]]
    groups: int
    limit: int
    folded_runs: int
    folded_groups: int

    def families(self) -> list:
        """The labelled families, for prometheus_client's encoders."""
        from prometheus_client.core import GaugeMetricFamily

        out = []
        for name, extra in FLEET_FAMILIES:
            fam = GaugeMetricFamily(name, HELP[name], labels=[*GROUP_LABELS, extra])
            for labels, value in self.samples[name]:
                fam.add_metric(list(labels), value)
            out.append(fam)
        return out

    def scalar_families(self) -> list:
        """The label-set limit and what it folded, as unlabelled gauges."""
        from prometheus_client.core import GaugeMetricFamily

        return [GaugeMetricFamily(name, HELP[name], value=value) for name, value in (
            ("streameval_fleet_groups", self.groups),
            ("streameval_fleet_groups_limit", self.limit),
            ("streameval_fleet_folded_runs", self.folded_runs),
            ("streameval_fleet_folded_groups", self.folded_groups))]


class Fleet:
    """Folds the runs' entries into the fleet's numbers, keeping which label sets are
    exported from one scrape to the next (a label set does not flip in and out of
    ``other`` while its runs are in memory).

    Label sets are listed in the order they were admitted, which is the order of their
    first runs while none leaves. ``in_run_order`` lists them in the order of their first
    runs among the entries given, always: the front of several workers folds their runs
    as they come, in no order of their making, and lists them as one watcher would."""

    def __init__(self, max_groups: int = MAX_GROUPS, in_run_order: bool = False):
        if max_groups < 0:
            raise ValueError("max_groups must be >= 0")
        self.max_groups = max_groups
        self.in_run_order = in_run_order
        #: label sets exported, in the order they were admitted
        self._admitted: dict[Group, None] = {}
        # two scrapes (two formats) may fold at once
        self._lock = threading.Lock()

    def numbers(self, entries: Iterable[FleetEntry]) -> FleetNumbers:
        """The fleet of the runs whose entries are given (every run in memory)."""
        with self._lock:
            sums, folded_runs, folded_groups = self._fold(list(entries))
        samples: dict[str, list[Sample]] = {name: [] for name, _extra in FLEET_FAMILIES}
        runs, mean, count, aborted = (samples[name] for name, _extra in FLEET_FAMILIES)
        for (agent, model, experiment), s in sums.items():
            runs.append(((agent, model, experiment, "active"), float(s.active)))
            runs.append(((agent, model, experiment, "finished"), float(s.finished)))
            for m, (value, n) in zip(FLEET_METRICS, _means(s.rows), strict=True):
                key = (agent, model, experiment, m.name)
                count.append((key, float(n)))
                if value is not None:
                    mean.append((key, value))
            for policy, n in sorted((s.aborted or {}).items()):
                aborted.append(((agent, model, experiment, policy), float(n)))
        return FleetNumbers(samples, len(sums) - (OTHER_GROUP in sums), self.max_groups,
                            folded_runs, folded_groups)

    def _fold(self, entries: list[FleetEntry]) -> tuple[dict[Group, _Sums], int, int]:
        present: dict[Group, None] = dict.fromkeys(e.group for e in entries)
        present.pop(OTHER_GROUP, None)   # a run literally labelled other is counted there
        for gone in [g for g in self._admitted if g not in present]:
            del self._admitted[gone]   # its runs all left memory: the slot is free
        for g in present:
            if len(self._admitted) >= self.max_groups:
                break
            self._admitted.setdefault(g, None)
        admitted = self._admitted
        order = (g for g in present if g in admitted) if self.in_run_order else admitted
        sums: dict[Group, _Sums] = {g: _Sums() for g in order}
        folded_runs = 0
        folded: set[Group] = set()
        for e in entries:
            s = sums.get(e.group)
            if s is None:
                if e.group != OTHER_GROUP:
                    folded_runs += 1
                    folded.add(e.group)
                s = sums.get(OTHER_GROUP)
                if s is None:
                    s = sums[OTHER_GROUP] = _Sums()
            s.add(e)
        return sums, folded_runs, len(folded)


def _means(rows: list[tuple[float | None, ...]] | None) -> list[tuple[float | None, int]]:
    """(mean, n) of every metric over ``rows``: the mean of the values present, None
    when no row has the number (no series: a mean of nothing is not 0)."""
    if not rows:
        return [(None, 0)] * len(FLEET_METRICS)
    out: list[tuple[float | None, int]] = []
    for col in zip(*rows, strict=True):   # one column per metric
        vals = [v for v in col if v is not None]
        out.append((math.fsum(vals) / len(vals), len(vals)) if vals else (None, 0))
    return out
