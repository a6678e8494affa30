"""One row per record, for spreadsheets and data frames: ``replay --csv`` and ``--parquet``.

The Benchkit columns come first, in Benchkit's order and with its names, so a Benchkit
reader finds what it knows; then who the run is (agent, model, experiment, labels,
repository, gold source), whether it solved its task (``resolved``: ``true``, ``false`` or
empty; a boolean column in parquet), why it was measured against no gold
(``gold_missing``), and every other per-run number of ``report.fields`` (F1, steps, tool
calls, tokens, cost, localisation, the gold-free signals). An error row has its identity,
outcome and ``error`` only; a number the record does not have is an empty cell (CSV) or
a null (parquet).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from streameval.report.fields import IDENTITY_COLUMNS, METRICS

__all__ = ["BENCHKIT_COLUMNS", "COLUMNS", "cell", "record_row", "write_csv", "write_parquet"]

#: Benchkit's names, granularities in its order (docs/replay.md, "CSV")
_BENCHKIT_ORDER = ("file", "line", "span", "symbol")
#: ``run_id`` and ``trace`` join a row to its run (and its trace file): several runs of one
#: instance are several rows
BENCHKIT_COLUMNS: tuple[str, ...] = (
    ("instance_id", "run_id", "trace")
    + tuple(f"contextbench_final_{g}_{m}" for g in _BENCHKIT_ORDER
            for m in ("coverage", "precision"))
    + tuple(f"contextbench_traj_auc_{g}" for g in _BENCHKIT_ORDER)
    + tuple(f"contextbench_traj_redundancy_{g}" for g in _BENCHKIT_ORDER)
    + ("contextbench_editloc_recall", "contextbench_editloc_precision", "error")
)
_METRIC_BY_COLUMN = {m.column: m for m in METRICS}
#: the run's outcome (``sources.outcomes``): true, false or null
OUTCOME_COLUMN = "resolved"
#: every column: Benchkit's, then the identity, the outcome, and the numbers it has no
#: column for
COLUMNS: tuple[str, ...] = BENCHKIT_COLUMNS + tuple(
    c for c in dict.fromkeys((*IDENTITY_COLUMNS, OUTCOME_COLUMN, "gold_missing",
                              *(m.column for m in METRICS)))
    if c not in BENCHKIT_COLUMNS)
_TEXT = frozenset(c for c in COLUMNS if c not in _METRIC_BY_COLUMN and c != OUTCOME_COLUMN)


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def record_row(record: dict[str, Any]) -> dict[str, Any]:
    """The record as ``{column: value}``: text, float, int or None."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    for key in ("instance_id", "run_id", "trace", "agent", "model", "experiment", "repo"):
        v = record.get(key)
        row[key] = None if v is None else str(v)
    row["labels"] = _json(record.get("labels") or {})
    row["gold_source"] = _json(record.get("gold_source"))
    resolved = record.get("resolved")
    row[OUTCOME_COLUMN] = resolved if isinstance(resolved, bool) else None
    row["gold_missing"] = record.get("gold_missing")
    if "error" in record:
        row["error"] = str(record["error"])
        return row
    for m in METRICS:
        if m.column == OUTCOME_COLUMN:   # the outcome stays true/false, not 1/0
            continue
        v = m.value(record)
        row[m.column] = None if v is None else (int(v) if m.integer else v)
    return row


def cell(value: Any) -> str:
    """A value as a CSV cell: empty for None, true/false, a float's repr."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_csv(records: Iterable[dict[str, Any]], path: str | Path) -> None:
    """Every record as one CSV row, input order."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        for record in records:
            writer.writerow({c: cell(v) for c, v in record_row(record).items()})


def write_parquet(records: Iterable[dict[str, Any]], path: str | Path) -> None:
    """Every record as one parquet row: text columns as strings, counts as int64, the
    rest as float64, absent values as nulls."""
    import pyarrow as pa  # heavy: only when a parquet file is written
    import pyarrow.parquet as pq

    rows = [record_row(r) for r in records]
    fields = []
    for c in COLUMNS:
        m = _METRIC_BY_COLUMN.get(c)
        kind = pa.string() if c in _TEXT else pa.bool_() if c == OUTCOME_COLUMN \
            else pa.int64() if m is not None and m.integer else pa.float64()
        fields.append(pa.field(c, kind))
    schema = pa.schema(fields)
    table = pa.table({c: [row[c] for row in rows] for c in COLUMNS}, schema=schema)
    pq.write_table(table, path)
