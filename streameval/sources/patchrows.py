"""Reference patches by instance: the file ``--gold-from-patch`` names (docs/metrics.md §1b).

A JSONL file or a parquet table with one row per instance: ``instance_id`` and ``patch``
(the SWE-bench columns), optionally ``repo`` and ``base_commit`` so the repository can be
found. A row that cannot be used is reported with its id (``errors``), never skipped in
silence; a file with no usable row is an error naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streameval.errors import GoldError, Reason

__all__ = ["PatchRow", "load_patch_rows"]

_COLUMNS = ("instance_id", "patch", "repo", "base_commit")


@dataclass(frozen=True, slots=True)
class PatchRow:
    """One instance's reference patch and where its repository is."""

    instance_id: str
    patch: str
    repo: str | None = None
    base_commit: str | None = None


def load_patch_rows(path: str | Path) -> tuple[dict[str, PatchRow], list[tuple[str, str]]]:
    """The usable rows by instance id, and ``(id, why)`` for each unusable one.

    Raises GoldError (MISSING_GOLD) when the file does not exist, GoldError (BAD_GOLD)
    when it cannot be read or holds no usable row.
    """
    p = Path(path)
    if not p.is_file():
        raise GoldError(f"reference patch file not found: {p}", Reason.MISSING_GOLD)
    rows = _parquet(p) if _is_parquet(p) else _jsonl(p)
    good: dict[str, PatchRow] = {}
    errors: list[tuple[str, str]] = []
    for where, row in rows:
        iid = row.get("instance_id") if isinstance(row, dict) else None
        if not isinstance(row, dict):
            errors.append((where, f"row is a {type(row).__name__}, not an object"))
        elif not isinstance(iid, str) or not iid.strip():
            errors.append((where, "row has no instance_id"))
        elif not isinstance(row.get("patch"), str) or not row["patch"].strip():
            errors.append((iid, "row has no patch"))
        elif iid in good:
            errors.append((iid, "duplicate instance_id; the first row is kept"))
        else:
            good[iid] = PatchRow(iid, row["patch"], _text(row.get("repo")),
                                 _text(row.get("base_commit")))
    if not good:
        why = f"the first problem: {errors[0][0]}: {errors[0][1]}" if errors else "no rows"
        raise GoldError(f"reference patch file {p} has no usable row ({why})")
    return good, errors


def _is_parquet(p: Path) -> bool:
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1" or p.suffix == ".parquet"


def _parquet(p: Path) -> list[tuple[str, Any]]:
    import pyarrow.parquet as pq  # heavy: only when a parquet file is read

    try:
        names = set(pq.read_schema(p).names)
        table = pq.read_table(p, columns=[c for c in _COLUMNS if c in names])
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise GoldError(f"reference patch file {p} cannot be read as parquet: {e}") from e
    return [(f"{p.name}#{n}", row) for n, row in enumerate(table.to_pylist(), 1)]


def _jsonl(p: Path) -> list[tuple[str, Any]]:
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise GoldError(f"reference patch file {p} is not UTF-8 text: {e}") from e
    out: list[tuple[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{p.name}:{lineno}", json.loads(line)))
        except json.JSONDecodeError as e:
            out.append((f"{p.name}:{lineno}", f"not valid JSON: {e}"))
    return out


def _text(v: Any) -> str | None:
    s = str(v).strip() if v is not None else ""
    return s or None
