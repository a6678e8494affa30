"""Arms of a comparison: records split by a key, repeated runs averaged, instances paired.

A comparison asks whether arm B does better than arm A *on the same instances*. So the
records of each arm are first reduced to one row per instance: the mean of each metric
over the instance's scored runs (repeated runs are averaged first, so an instance run
five times weighs as much as one run once), and the mean per-step coverage curve. A
metric a run that could not be scored has too (``Metric.of_error_records``: whether it
solved its task) is the mean over the error records as well, so an instance whose every
run failed to score still has its outcome. Then the instances both arms scored are the
pairs (for such a metric, the instances both have it for); the others are listed, never
silently dropped (docs/compare.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streameval.model import GRANULARITIES
from streameval.report.fields import Metric

__all__ = ["ArmInstances", "InstanceRow", "Pairing", "arm_key", "cluster_of", "instance_key",
           "pair_arms", "reduce_arm", "split_records"]

#: ``--by`` values: a record field, or ``label:KEY``
BY_FIELDS = ("experiment", "agent", "model")
_SWE_ID = re.compile(r"^(?P<owner>[^_/\s]+(?:_[^_/\s]+)*)__(?P<name>.+)-\d+$")


def instance_key(record: dict[str, Any]) -> str:
    """What pairs two runs: the gold row's own id when the record names one (two arms
    may spell the instance differently), else the id the input gave."""
    return str(record.get("gold_instance_id") or record.get("instance_id"))


#: where a pair's repository was read: the record's ``repo``, its SWE-bench style id, none
CLUSTER_SOURCES = ("repo", "id", "none")


def cluster_of(record: dict[str, Any]) -> tuple[str | None, str]:
    """The repository a run's instance belongs to (runs of one repository are alike, so
    they are the units of a comparison's inference), and where it was read: the record's
    ``repo`` (``owner/name``, lower case, without ``.git``), else the ``owner__name`` of
    a SWE-bench style id, else none (None: the report names such instances)."""
    repo = record.get("repo")
    if isinstance(repo, str) and repo.strip():
        r = repo.strip().rstrip("/").removesuffix(".git").lower()
        return "/".join(r.split("/")[-2:]), "repo"
    iid = str(record.get("instance_id") or "")
    m = _SWE_ID.match(iid.removeprefix("instance_"))
    return (f"{m['owner']}/{m['name']}".lower(), "id") if m else (None, "none")


def arm_key(record: dict[str, Any], by: str) -> str | None:
    """The arm a record belongs to under ``--by`` (None: the record does not say)."""
    if by.startswith("label:"):
        value = (record.get("labels") or {}).get(by[len("label:"):])
    elif by in BY_FIELDS:
        value = record.get(by)
    else:
        raise ValueError(f"--by wants experiment, agent, model or label:KEY, got {by!r}")
    return None if value in (None, "", "unknown") else str(value)


def split_records(records: Iterable[dict[str, Any]], by: str
                  ) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Records by arm (arms in order of first appearance), and how many records name no
    arm (they are left out, and counted)."""
    arms: dict[str, list[dict[str, Any]]] = {}
    unnamed = 0
    for rec in records:
        key = arm_key(rec, by)
        if key is None:
            unnamed += 1
        else:
            arms.setdefault(key, []).append(rec)
    return arms, unnamed


@dataclass(slots=True)
class InstanceRow:
    """One instance of one arm: its metrics averaged over its scored runs (those of
    error records too, for a metric they have: ``Metric.of_error_records``)."""

    key: str
    instance_id: str
    cluster: str | None
    #: where the repository was read (``CLUSTER_SOURCES``)
    cluster_from: str
    #: its scored runs; 0: none could be scored, the row holds what error records have
    runs: int
    values: dict[str, float | None]
    #: per granularity, the mean per-step coverage of its runs (a run that stopped
    #: keeps its last coverage)
    curve: dict[str, list[float]] = field(default_factory=dict)


@dataclass(slots=True)
class ArmInstances:
    """An arm reduced to instances; ``errors`` counts its runs that could not be scored,
    ``errors_only`` the instances that have no scored run at all."""

    name: str
    rows: dict[str, InstanceRow]
    runs: int
    errors: int
    errors_only: list[str]

    @property
    def scored(self) -> set[str]:
        """The instances it scored (a row of the others holds only their outcome)."""
        return {k for k, r in self.rows.items() if r.runs}


def _curve(records: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    per_run = [[s.get("coverage", {}) for s in (r.get("trajectory") or {}).get("steps") or []]
               for r in records]
    length = max((len(c) for c in per_run), default=0)
    out: dict[str, list[float]] = {}
    for g in GRANULARITIES:
        rows = []
        for steps in per_run:
            values = [float(s.get(g, 0.0)) for s in steps]
            last = values[-1] if values else 0.0
            rows.append(values + [last] * (length - len(values)))
        out[g] = [sum(col) / len(col) for col in zip(*rows)] if rows else []
    return out


def reduce_arm(name: str, records: Iterable[dict[str, Any]], metrics: Sequence[Metric],
               curves: bool = True) -> ArmInstances:
    """One row per instance: each metric is the mean over the instance's scored runs
    that have it, and its error records too for a metric they may have
    (``Metric.of_error_records``); None when none has. An instance no run of which was
    scored has a row when its error records have such a metric (``runs`` 0), and is
    still in ``errors_only``."""
    scored: dict[str, list[dict[str, Any]]] = {}
    errored: dict[str, list[dict[str, Any]]] = {}
    runs = errors = 0
    for rec in records:
        runs += 1
        key = instance_key(rec)
        if "error" in rec:
            errors += 1
            errored.setdefault(key, []).append(rec)
        else:
            scored.setdefault(key, []).append(rec)
    rows: dict[str, InstanceRow] = {}
    for key in [*scored, *(k for k in errored if k not in scored)]:
        recs = scored.get(key, [])
        every = recs + errored.get(key, [])
        values: dict[str, float | None] = {}
        for m in metrics:
            vs = [v for v in (m.value(r) for r in (every if m.of_error_records else recs))
                  if v is not None]
            values[m.name] = sum(vs) / len(vs) if vs else None
        if recs or any(v is not None for v in values.values()):
            rows[key] = InstanceRow(key, str(every[0].get("instance_id")),
                                    *cluster_of(every[0]), len(recs), values,
                                    _curve(recs) if curves and recs else {})
    return ArmInstances(name, rows, runs, errors,
                        sorted(k for k in errored if k not in scored))


@dataclass(slots=True)
class Pairing:
    """Two arms on their paired instances: per pair, its repository and each arm's
    values (pairs x metrics, NaN where an arm lacks the metric); the instances one arm
    scored alone; each arm's losses, the instances of the comparison (either arm ran
    them) it has no score for; how many pairs ``--missing worst`` made up; and the
    pairs made only by what error records have (``outcome_only``: their outcome)."""

    keys: list[str]
    clusters: list[str | None]
    sources: list[str]
    a: Any
    b: Any
    only_a: list[str]
    only_b: list[str]
    lost_a: list[str]
    lost_b: list[str]
    instances: int
    imputed_a: int = 0
    imputed_b: int = 0
    outcome_only: list[str] = field(default_factory=list)


def _pair_cluster(a: InstanceRow | None, b: InstanceRow | None) -> tuple[str | None, str]:
    """The baseline's repository, unless only the other arm's record named one."""
    if a is None or (a.cluster is None and b is not None):
        return b.cluster, b.cluster_from
    return a.cluster, a.cluster_from


def _worst(arms: Sequence[ArmInstances], m: Metric) -> float:
    values = [v for arm in arms for r in arm.rows.values()
              if (v := r.values[m.name]) is not None]
    if not values:
        return float("nan")
    return min(values) if m.better > 0 else max(values)


def pair_arms(a: ArmInstances, b: ArmInstances, metrics: Sequence[Metric],
              missing: str = "drop") -> Pairing:
    """The pairs of ``a`` and ``b``: the instances both scored, and those both have a
    row for (a metric of error records: the outcome of a run that could not be scored).
    ``missing="worst"``: an instance one arm scored and the other did not (it failed, or
    did not run it) is paired too, the arm that lacks it taking, per metric it has no
    value for, the worst value either arm scored."""
    import numpy as np

    if missing not in ("drop", "worst"):
        raise ValueError(f"missing must be drop or worst, got {missing!r}")
    instances = set(a.rows) | set(b.rows) | set(a.errors_only) | set(b.errors_only)
    sa, sb = a.scored, b.scored
    made_up = (sa | sb) - (sa & sb) if missing == "worst" else set()
    keys = sorted((set(a.rows) & set(b.rows)) | made_up)
    worst = [_worst((a, b), m) for m in metrics]

    def matrix(arm: ArmInstances, scored: set[str]) -> Any:
        def value(k: str, j: int, m: Metric) -> float:
            row = arm.rows.get(k)
            v = row.values[m.name] if row is not None else None
            return worst[j] if v is None and k in made_up and k not in scored else _nan(v)

        out = np.array([[value(k, j, m) for j, m in enumerate(metrics)] for k in keys],
                       dtype=np.float64)
        return out.reshape(len(keys), len(metrics))

    where = [_pair_cluster(a.rows.get(k), b.rows.get(k)) for k in keys]
    return Pairing(keys, [c for c, _ in where], [s for _, s in where], matrix(a, sa),
                   matrix(b, sb), sorted(sa - sb), sorted(sb - sa),
                   sorted(instances - sa), sorted(instances - sb), len(instances),
                   sum(k in made_up and k not in sa for k in keys),
                   sum(k in made_up and k not in sb for k in keys),
                   [k for k in keys if k not in made_up and not (k in sa and k in sb)])


def _nan(v: float | None) -> float:
    return float("nan") if v is None else v
