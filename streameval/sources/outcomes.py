"""Whether each run solved its task: the file ``--outcomes PATH`` names (docs/outcomes.md §1).

What a user loses by stopping a run is a solved task, so every command that reads runs
can join the harness's verdict to them. One loader reads every layout a harness or a
user writes, and one table answers for a run (by its run id where the file names runs,
else by its instance id):

- a SWE-bench harness log directory: the ``report.json`` of each instance, nested
  (``logs/run_evaluation/<run>/<model>/<instance>/report.json``) or flattened
  (``<instance>/report.json``), in the harness's shape (``{"<id>": {"resolved": ...}}``)
  or unwrapped (``{"resolved": ...}``, the instance named by its folder);
- the harness's run summary (``resolved_ids``, ``unresolved_ids``, ``error_ids``,
  ``empty_patch_ids``: the harness counts the last three as not resolved);
- JSON (a list of rows, a list under one key, or ``{id: bool}``), JSONL, CSV or parquet
  rows of ``instance_id``, ``resolved`` and optionally ``run_id``; other columns are
  kept as the run's labels.

A file that cannot be read, names no outcome, or says two things of one run is an
``OutcomeError`` naming the file (the commands make it a usage error).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from streameval.errors import Reason, StreamevalError
from streameval.model import RunIdentity

__all__ = ["Outcome", "OutcomeError", "OutcomeMatch", "Outcomes", "load_outcomes",
           "parse_resolved"]

REPORT_NAME = "report.json"
#: the run summary's lists, and the verdict each stands for
_SUMMARY_LISTS = (("resolved_ids", True), ("unresolved_ids", False), ("error_ids", False),
                  ("empty_patch_ids", False))
_ROW_KEYS = frozenset({"instance_id", "run_id", "resolved"})
#: a label key (as ``traces.labels`` takes them); other columns are not labels
_LABEL_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_TRUE = frozenset({"true", "1", "yes", "resolved"})
_FALSE = frozenset({"false", "0", "no", "unresolved"})
_NULL = frozenset({"", "null", "none", "nan", "na"})
#: labels an outcome row gives at most, and the length of each value
MAX_LABELS, MAX_VALUE = 16, 200


class OutcomeError(StreamevalError):
    """An outcomes file that cannot be used; the message names the file and why."""

    reason = Reason.UNREADABLE_PREDICTION


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run's verdict (None: the file does not say) and the labels its row adds."""

    resolved: bool | None
    labels: Mapping[str, str] = field(default_factory=dict)


def parse_resolved(value: Any, where: str) -> bool | None:
    """A verdict as files write it: a boolean, 0/1, ``true``/``false``, ``yes``/``no``,
    ``resolved``/``unresolved`` (any case); empty, null and NaN are None."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return None
        if value in (0, 1):
            return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        if text in _NULL:
            return None
    raise OutcomeError(f"{where}: resolved is {value!r}, not true, false or empty")


@dataclass(frozen=True, slots=True)
class OutcomeMatch:
    """How a batch of runs met an outcomes file: runs with a row, runs in all, and the
    file's rows no run used."""

    matched: int
    runs: int
    rows: int
    unused: int

    def message(self, source: str) -> str:
        text = f"--outcomes {source}: {self.matched} of {self.runs} run(s) have an outcome"
        if self.matched < self.runs:
            text += f" ({self.runs - self.matched} have none: their resolved is null)"
        if self.unused:
            text += f"; {self.unused} of its {self.rows} row(s) name no run"
        return text


class Outcomes:
    """The outcomes of one file, by run id (rows that name one) and by instance id."""

    def __init__(self, source: str, by_instance: dict[str, Outcome],
                 by_run: dict[str, Outcome] | None = None):
        self.source = source
        self.by_instance = by_instance
        self.by_run = by_run or {}

    def __len__(self) -> int:
        return len(self.by_instance) + len(self.by_run)

    def get(self, instance_id: str | None, run_id: str | None = None) -> Outcome | None:
        """The run's outcome: its run id's row first, else its instance's; None."""
        if run_id is not None and run_id in self.by_run:
            return self.by_run[run_id]
        return self.by_instance.get(instance_id) if instance_id is not None else None

    def apply(self, identity: RunIdentity) -> RunIdentity:
        """``identity`` with the file's verdict (over meta.json's, which stays where the
        file says nothing) and the row's labels for keys the run does not have."""
        found = self.get(identity.instance_id, identity.run_id)
        if found is None:
            return identity
        labels, experiment = _merged(found, identity.run_labels, identity.experiment)
        resolved = identity.resolved if found.resolved is None else found.resolved
        return replace(identity, resolved=resolved, run_labels=labels, experiment=experiment)

    def join(self, record: dict[str, Any]) -> bool:
        """Lay the run's outcome onto a record (``view``, ``compare``), as ``apply``
        does onto an identity; True when the file has the run."""
        found = self.get(_text(record.get("instance_id")), _text(record.get("run_id")))
        if found is None:
            record.setdefault("resolved", None)
            return False
        labels = record.get("labels") if isinstance(record.get("labels"), dict) else {}
        merged, experiment = _merged(found, labels, record.get("experiment"))
        if merged or "labels" in record:
            record["labels"] = merged
        if experiment is not None:
            record["experiment"] = experiment
        if found.resolved is not None or "resolved" not in record:
            record["resolved"] = found.resolved
        return True

    def match(self, records: Iterable[Mapping[str, Any]]) -> OutcomeMatch:
        """How many runs (records naming an instance) the file has, and how many of its
        rows named none of them."""
        runs = matched = 0
        used_runs: set[str] = set()
        used_instances: set[str] = set()
        for r in records:
            iid, rid = _text(r.get("instance_id")), _text(r.get("run_id"))
            if iid is None:
                continue
            runs += 1
            if rid is not None and rid in self.by_run:
                used_runs.add(rid)
                matched += 1
            elif iid in self.by_instance:
                used_instances.add(iid)
                matched += 1
        unused = (len(self.by_run) - len(used_runs)) + (len(self.by_instance) - len(used_instances))
        return OutcomeMatch(matched, runs, len(self), unused)


def _merged(found: Outcome, labels: Mapping[str, str], experiment: str | None
            ) -> tuple[dict[str, str], str | None]:
    """The run's labels with the row's added where the run has no such key; the
    row's ``experiment`` names the run's experiment only when it has none."""
    out = dict(labels)
    for key, value in found.labels.items():
        if key == "experiment":
            experiment = experiment or value
        else:
            out.setdefault(key, value)
    return dict(sorted(out.items())), experiment


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --------------------------------------------------------------------------- loading


def load_outcomes(path: str | os.PathLike[str]) -> Outcomes:
    """The outcomes at ``path`` (the module's layouts); OutcomeError naming the file."""
    p = Path(path)
    if p.is_dir():
        return Outcomes(p.name, _report_dir(p))
    if not p.is_file():
        raise OutcomeError(f"--outcomes {p}: no such file or directory")
    with open(p, "rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    if parquet or p.suffix == ".parquet":
        return _table(p, _parquet_rows(p))
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OutcomeError(f"--outcomes {p}: cannot be read as text ({exc})") from None
    if p.suffix == ".csv":
        return _table(p, ((f"{p.name}:{n}", row) for n, row in
                          enumerate(csv.DictReader(text.splitlines()), 2)))
    if p.suffix == ".jsonl":
        return _table(p, _jsonl_rows(p, text))
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _table(p, _jsonl_rows(p, text))   # JSON lines under another name
    return _json(p, data)


def _report_dir(root: Path) -> dict[str, Outcome]:
    """Every ``report.json`` under ``root``; one instance said twice differently is an
    error (point at one run's folder, or give a table with ``run_id``)."""
    found: dict[str, tuple[Outcome, Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if REPORT_NAME not in filenames:
            continue
        path = Path(dirpath) / REPORT_NAME
        for iid, outcome in _report(path):
            seen = found.get(iid)
            if seen is not None and seen[0] != outcome:
                raise OutcomeError(
                    f"--outcomes {root}: {iid} is resolved={seen[0].resolved} in {seen[1]} and "
                    f"resolved={outcome.resolved} in {path}; point --outcomes at one run's "
                    "folder, or give a table with a run_id column")
            found.setdefault(iid, (outcome, path))
    if not found:
        raise OutcomeError(f"--outcomes {root}: no {REPORT_NAME} under it (a SWE-bench "
                           "harness log directory holds one per instance)")
    return {iid: o for iid, (o, _p) in found.items()}


def _report(path: Path) -> Iterator[tuple[str, Outcome]]:
    """One harness ``report.json``: ``{"<id>": {"resolved": ...}}``, or unwrapped
    (``{"resolved": ...}``) for the instance its folder is named after."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OutcomeError(f"--outcomes: {path} is not a JSON report ({exc})") from None
    if isinstance(data, dict) and "resolved" in data:
        yield path.parent.name, Outcome(parse_resolved(data["resolved"], str(path)))
        return
    reports = {k: v for k, v in data.items() if isinstance(v, dict) and "resolved" in v} \
        if isinstance(data, dict) else {}
    if not reports:
        raise OutcomeError(f"--outcomes: {path} holds no resolved verdict")
    for iid, report in reports.items():
        yield iid, Outcome(parse_resolved(report["resolved"], f"{path}: {iid}"))


def _json(p: Path, data: Any) -> Outcomes:
    if p.name == REPORT_NAME:   # one instance's report, given alone
        return Outcomes(p.name, dict(_report(p)))
    if isinstance(data, dict) and any(k in data for k, _v in _SUMMARY_LISTS):
        return Outcomes(p.name, _summary(p, data))
    if isinstance(data, list):
        return _table(p, ((f"{p.name}[{n}]", row) for n, row in enumerate(data)))
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)
                 and any(isinstance(x, dict) and "instance_id" in x for x in v)]
        if len(lists) == 1:   # {"instances": [{instance_id, resolved}, ...], ...}
            return _table(p, ((f"{p.name}[{n}]", row) for n, row in enumerate(lists[0])))
        pairs = [(k, v.get("resolved") if isinstance(v, dict) else v) for k, v in data.items()
                 if isinstance(v, (bool, dict))]
        if pairs:   # {id: bool} or merged reports {id: {"resolved": ...}}
            return _table(p, ((f"{p.name}: {k}", {"instance_id": k, "resolved": v})
                              for k, v in pairs))
    raise OutcomeError(f"--outcomes {p}: no outcome in it (expected rows of instance_id and "
                       "resolved, a harness summary with resolved_ids, or report.json files)")


def _summary(p: Path, data: Mapping[str, Any]) -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    for key, verdict in _SUMMARY_LISTS:
        ids = data.get(key) or []
        if not isinstance(ids, list):
            raise OutcomeError(f"--outcomes {p}: {key} is not a list")
        for iid in ids:
            if not isinstance(iid, str):
                raise OutcomeError(f"--outcomes {p}: {key} holds {iid!r}, not an instance id")
            if out.get(iid, Outcome(verdict)).resolved is not verdict:
                raise OutcomeError(f"--outcomes {p}: {iid} is in {key} and in another list")
            out[iid] = Outcome(verdict)
    return out


def _jsonl_rows(p: Path, text: str) -> Iterator[tuple[str, Any]]:
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield f"{p.name}:{n}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise OutcomeError(f"--outcomes {p}:{n}: not JSON ({exc})") from None


def _parquet_rows(p: Path) -> Iterator[tuple[str, Any]]:
    import pyarrow.parquet as pq  # heavy: only when a parquet file is read

    try:
        table = pq.read_table(p)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise OutcomeError(f"--outcomes {p}: cannot be read as parquet ({exc})") from None
    for n, row in enumerate(table.to_pylist(), 1):
        yield f"{p.name} row {n}", row


def _table(p: Path, rows: Iterable[tuple[str, Any]]) -> Outcomes:
    """Rows of ``instance_id``, ``resolved``, maybe ``run_id``, and labels."""
    by_instance: dict[str, Outcome] = {}
    by_run: dict[str, Outcome] = {}
    said = False
    for where, row in rows:
        if not isinstance(row, dict):
            raise OutcomeError(f"--outcomes {where}: a row is a {type(row).__name__}, not an object")
        iid = _text(row.get("instance_id"))
        if iid is None:
            raise OutcomeError(f"--outcomes {where}: the row has no instance_id")
        said = said or "resolved" in row
        outcome = Outcome(parse_resolved(row.get("resolved"), where), _labels(row))
        rid = _text(row.get("run_id"))
        key, table = (rid, by_run) if rid is not None else (iid, by_instance)
        if key in table and table[key] != outcome:
            raise OutcomeError(f"--outcomes {where}: {key} has another row that says otherwise")
        table[key] = outcome
    if not said:
        raise OutcomeError(f"--outcomes {p}: no row has a resolved column (is it the right file?)")
    return Outcomes(p.name, by_instance, by_run)


def _labels(row: Mapping[str, Any]) -> dict[str, str]:
    """A row's other columns as labels: label keys with a value (bool as true/false)."""
    out: dict[str, str] = {}
    for key, value in row.items():
        if key in _ROW_KEYS or not isinstance(key, str) or not _LABEL_KEY.match(key):
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        if isinstance(value, float) and math.isnan(value):
            continue
        if isinstance(value, (str, int, float)) and str(value).strip():
            out[key] = str(value).strip()[:MAX_VALUE]
        if len(out) == MAX_LABELS:
            break
    return out
