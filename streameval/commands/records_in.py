"""What ``compare`` and ``outcomes`` read: records files as replay writes them, or traces
and predictions scored here with the same engine (``runs.batch``), with ``--outcomes``
laid onto the records read."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import orjson

from streameval.commands.options import outcomes_of, sources
from streameval.errors import UsageError
from streameval.scoring.record import is_record

__all__ = ["Replayer", "is_records_file", "load_input", "read_records"]


def _loads(line: bytes) -> Any:
    """One JSON line; NaN and Infinity, which Python's json writes, are read too (orjson
    refuses them), and become no value when a metric is read (``Metric.value``)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def is_records_file(path: Path) -> bool:
    """A JSONL file of records as replay writes them (not traces or predictions): its
    first line is a record (``scoring.record.is_record``)."""
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    return is_record(_loads(line))
    except (OSError, ValueError):
        return False
    return False


def read_records(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError as exc:
                raise UsageError(f"{path}:{n}: not a JSON record ({exc})") from None
            if isinstance(obj, dict):
                out.append(obj)
    return out


class Replayer:
    """Traces and predictions scored here, with one context for every arm."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.context = None
        #: ``--outcomes``, laid onto records files' runs (replayed runs get it as theirs)
        self.outcomes = outcomes_of(getattr(args, "outcomes", None))

    def records(self, path: Path) -> list[dict[str, Any]]:
        from streameval.runs.batch import BatchContext, collect_jobs, evaluate_jobs

        a = self.args
        if not (a.repos or a.repo):
            raise UsageError(f"{path} holds traces: give --repos DIR or --repo DIR (and "
                             "--gold or --gold-from-patch) to score them, or a records file")
        given = sources(a)   # without gold: gold-free signals only (docs/metrics.md §5b)
        if self.context is None:
            self.context = BatchContext.build(*given)
        jobs = list(collect_jobs([str(path)], a.fmt))
        return [r for batch in evaluate_jobs(jobs, self.context, given, a.workers)
                for r in batch]

    def close(self) -> None:
        if self.context is not None:
            self.context.repos.close()


def load_input(path: Path, replayer: Replayer) -> list[dict[str, Any]]:
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    if not is_records_file(path):
        return replayer.records(path)
    records = read_records(path)
    if replayer.outcomes is not None:
        for r in records:
            replayer.outcomes.join(r)
    return records
