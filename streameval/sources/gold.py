"""ContextBench gold context: loading and path normalizing.

Gold arrives in several shapes (the parquet split, JSON, JSONL, a directory of
``annot.json`` files). They all become ``GoldInstance`` rows here, so no other module
knows about file formats. A row whose gold context cannot be used is reported in
``GoldSet.errors`` with its id: a silently skipped row would make an instance look
"missing" instead of "broken", and a partially read row would give wrong numbers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.errors import GoldError, Reason


@dataclass(frozen=True, slots=True)
class GoldSpan:
    """One gold item: a normalized repo path and a 1-based inclusive line range."""

    file: str
    start_line: int
    end_line: int


@dataclass(slots=True)
class GoldInstance:
    instance_id: str
    original_inst_id: str | None = None
    repo: str | None = None           # "owner/name" or a bare name, as the row gives it
    base_commit: str | None = None
    language: str | None = None
    init_ctx: list[GoldSpan] = field(default_factory=list)
    add_ctx: list[GoldSpan] = field(default_factory=list)
    patch: str | None = None          # the gold patch, informational only
    #: where the gold came from (``gold_source`` of records): ``dataset`` (a gold file's
    #: rows) or ``patch`` (a reference patch, docs/metrics.md §1b), the file's name, and
    #: the context lines a patch's runs were widened by
    source: str = "dataset"
    source_file: str | None = None
    patch_context: int | None = None

    def source_record(self) -> dict[str, object]:
        """The record's ``gold_source``: what gold the numbers were measured against."""
        out: dict[str, object] = {"kind": self.source, "file": self.source_file}
        if self.source == "patch":
            out["context"] = self.patch_context
        return out

    @property
    def gold_context(self) -> list[GoldSpan]:
        """init_ctx + add_ctx: the file, symbol and span granularities use both, and a
        step "reads gold" (``first_gold_*``, docs/metrics.md §7) when it shows any of it."""
        return self.init_ctx + self.add_ctx

    @property
    def line_gold(self) -> list[GoldSpan]:
        """The line granularity's gold and EditLoc's: ``init_ctx`` only (docs/metrics.md
        §3, as the public evaluator counts lines)."""
        return self.init_ctx


def normalize_gold_path(path: str) -> str:
    """docs/metrics.md §2, gold paths.

    Only the documented prefixes go: the public evaluator strips *every* leading
    ``.``/``/`` character, which turns ``.github/x`` into ``github/x``; we keep dot
    directories intact.
    """
    p = path.replace("\\", "/")
    if p.startswith("/testbed/"):
        p = p[len("/testbed/"):]
    elif p.startswith("/workspace/"):
        rest = p[len("/workspace/"):]
        slash = rest.find("/")
        if slash > 0:  # drop exactly one directory level; a bare file keeps its name
            p = rest[slash + 1:]
    p = p.lstrip("/")
    while p.startswith("./"):
        p = p[2:].lstrip("/")
    return p


class GoldSet:
    """The instances of one gold file, found by ``instance_id`` or ``original_inst_id``."""

    def __init__(self, instances: Iterable[GoldInstance] = (),
                 errors: Iterable[tuple[str, str]] = ()):
        self._by_id: dict[str, GoldInstance] = {}
        self._by_original: dict[str, GoldInstance] = {}
        self.errors: list[tuple[str, str]] = list(errors)
        for inst in instances:
            self.add(inst)

    def add(self, inst: GoldInstance) -> None:
        """Add one instance; a repeated id is an error (the first row wins)."""
        if inst.instance_id in self._by_id:
            self.errors.append((inst.instance_id, "duplicate instance_id; the first row is kept"))
            return
        self._by_id[inst.instance_id] = inst
        if inst.original_inst_id and inst.original_inst_id not in self._by_original:
            self._by_original[inst.original_inst_id] = inst

    def get(self, instance_id: str) -> GoldInstance | None:
        """By ``instance_id`` first, then by ``original_inst_id`` (what traces usually name)."""
        return self._by_id.get(instance_id) or self._by_original.get(instance_id)

    def error_for(self, instance_id: str) -> str | None:
        """Why the row with this id was rejected, so a caller can say BAD_GOLD, not MISSING_GOLD."""
        for eid, message in self.errors:
            if eid == instance_id:
                return message
        return None

    def __iter__(self) -> Iterator[GoldInstance]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, instance_id: object) -> bool:
        return isinstance(instance_id, str) and self.get(instance_id) is not None


# --------------------------------------------------------------------------- loading

_ID_KEYS = ("instance_id", "inst_id", "id")
_CONTEXT_KEYS = frozenset({"gold_context", "gold_ctx", "init_ctx", "add_ctx"})
_ROW_MARKERS = {"instance_id", "inst_id", *_CONTEXT_KEYS}
_PARQUET_COLUMNS = ("instance_id", "inst_id", "original_inst_id", "repo", "repo_url",
                    "language", "base_commit", "commit", "gold_context", "gold_ctx",
                    "init_ctx", "add_ctx", "patch")


class _BadRow(ValueError):
    """A row's gold context is unusable; the message says why."""


def load_gold(path: str | os.PathLike[str]) -> GoldSet:
    """Read gold from parquet, JSON, JSONL or a directory of ``annot.json`` files.

    Raises GoldError (MISSING_GOLD) when ``path`` does not exist and GoldError
    (BAD_GOLD) when the file as a whole cannot be read; bad rows go to ``.errors``.
    """
    p = Path(path)
    if not p.exists():
        raise GoldError(f"gold file not found: {p}", Reason.MISSING_GOLD)
    gold = GoldSet()
    if p.is_dir():
        rows = _annot_dir_rows(p, gold.errors)
    else:
        rows = _file_rows(p)
    for n, (fallback_id, row) in enumerate(rows):
        _add_row(gold, row, fallback_id or f"{p.name}#{n + 1}")
    for inst in gold:
        inst.source_file = p.name   # records name the gold file, not where it was
    if not len(gold):
        why = (f"{len(gold.errors)} rejected, the first {gold.errors[0][0]}: {gold.errors[0][1]}"
               if gold.errors else "no rows at all")
        raise GoldError(f"gold file {p} has no usable gold rows ({why})")
    return gold


def _file_rows(p: Path) -> Iterator[tuple[str | None, Any]]:
    with open(p, "rb") as fh:
        head = fh.read(4)
    if head == b"PAR1" or p.suffix == ".parquet":
        return _parquet_rows(p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise GoldError(f"gold file {p} is not UTF-8 text: {e}") from e
    if p.suffix == ".jsonl":
        return _jsonl_rows(text, p)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if p.suffix == ".json":
            raise GoldError(f"gold file {p} is not valid JSON: {e}") from e
        return _jsonl_rows(text, p)   # unknown suffix: maybe JSON lines
    return _json_rows(data, p)


def _parquet_rows(p: Path) -> Iterator[tuple[str | None, Any]]:
    import pyarrow.parquet as pq  # heavy: only when a parquet file is read

    try:
        names = set(pq.read_schema(p).names)
        table = pq.read_table(p, columns=[c for c in _PARQUET_COLUMNS if c in names])
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise GoldError(f"gold file {p} cannot be read as parquet: {e}") from e
    for row in table.to_pylist():
        yield None, row


def _jsonl_rows(text: str, p: Path) -> Iterator[tuple[str | None, Any]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield None, json.loads(line)
        except json.JSONDecodeError as e:
            yield f"{p.name}:{lineno}", _Unparsed(f"line {lineno} is not valid JSON: {e}")


def _json_rows(data: Any, p: Path) -> Iterator[tuple[str | None, Any]]:
    if isinstance(data, list):
        for row in data:
            yield None, row
    elif isinstance(data, dict) and _ROW_MARKERS & data.keys():
        yield None, data                       # a single row
    elif isinstance(data, dict):
        for key, row in data.items():          # {instance_id: row}
            yield str(key), row
    else:
        raise GoldError(f"gold file {p}: expected a list or an object, got {type(data).__name__}")


def _annot_dir_rows(root: Path, errors: list[tuple[str, str]]) -> Iterator[tuple[str | None, Any]]:
    found = False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "annot.json" not in filenames:
            continue
        found = True
        f = Path(dirpath) / "annot.json"
        try:
            row = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            row = _Unparsed(f"{f} is not valid JSON: {e}")
        yield Path(dirpath).name, row
    if not found:
        errors.append((str(root), "directory holds no annot.json file"))


@dataclass
class _Unparsed:
    """A row that could not even be parsed; carried to ``_add_row`` to be reported."""

    message: str


def _add_row(gold: GoldSet, row: Any, fallback_id: str) -> None:
    if isinstance(row, _Unparsed):
        gold.errors.append((fallback_id, row.message))
        return
    if not isinstance(row, dict):
        gold.errors.append((fallback_id, f"row is a {type(row).__name__}, not an object"))
        return
    iid = _first_str(row, _ID_KEYS) or _str_or_none(row.get("original_inst_id")) or fallback_id
    try:
        gold.add(_instance(iid, row))
    except _BadRow as e:
        gold.errors.append((iid, f"bad gold context: {e}"))


def _instance(iid: str, row: dict[str, Any]) -> GoldInstance:
    """docs/metrics.md §1: init/add when given, else all gold_context is init."""
    # A null init_ctx/add_ctx (a column this row does not fill) is not "given".
    if row.get("init_ctx") is not None or row.get("add_ctx") is not None:
        init = _spans(row.get("init_ctx"), "init_ctx")
        add = _spans(row.get("add_ctx"), "add_ctx")
    else:
        key = "gold_context" if row.get("gold_context") is not None else "gold_ctx"
        init, add = _spans(row.get(key), key), []
    if not init and not add and not _CONTEXT_KEYS & row.keys():
        # a row that names no gold context at all is not a gold row (a trace line, a
        # CSV record); one whose context is empty is scored, as the evaluator does
        raise _BadRow("no gold_context, init_ctx or add_ctx")
    return GoldInstance(
        instance_id=iid,
        original_inst_id=_str_or_none(row.get("original_inst_id")),
        repo=_str_or_none(row.get("repo")) or _repo_from_url(row.get("repo_url")),
        base_commit=_first_str(row, ("base_commit", "commit")),
        language=_str_or_none(row.get("language")),
        init_ctx=init,
        add_ctx=add,
        patch=_str_or_none(row.get("patch")),
    )


def _spans(value: Any, key: str) -> list[GoldSpan]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        if not value.strip():
            return []
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise _BadRow(f"{key} is not valid JSON: {e}") from e
        if value is None:  # the string "null"
            return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise _BadRow(f"{key} is a {type(value).__name__}, not a list of items")
    return [_span(item, key, n) for n, item in enumerate(value)]


def _span(item: Any, key: str, n: int) -> GoldSpan:
    if not isinstance(item, dict):
        raise _BadRow(f"{key}[{n}] is a {type(item).__name__}, not an object")
    path = item.get("file", item.get("path"))
    if not isinstance(path, str) or not path.strip():
        raise _BadRow(f"{key}[{n}] has no file")
    start = _line(item.get("start_line", item.get("start")))
    end = _line(item.get("end_line", item.get("end")))
    if start is None or end is None:
        raise _BadRow(f"{key}[{n}] ({path}) has non-integer lines: "
                      f"start_line={item.get('start_line', item.get('start'))!r}, "
                      f"end_line={item.get('end_line', item.get('end'))!r}")
    return GoldSpan(normalize_gold_path(path), start, end)


def _line(v: Any) -> int | None:
    """An integer line number; digit strings and integral floats are accepted as such."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdecimal():
        return int(v.strip())
    return None


def _str_or_none(v: Any) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def _first_str(row: dict[str, Any], keys: Iterable[str]) -> str | None:
    for k in keys:
        s = _str_or_none(row.get(k))
        if s:
            return s
    return None


def _repo_from_url(url: Any) -> str | None:
    """``https://github.com/owner/name(.git)`` -> ``owner/name`` (annot.json rows)."""
    s = _str_or_none(url)
    if not s:
        return None
    s = s.rstrip("/")
    if s.endswith(".git"):
        s = s[:-4]
    parts = s.replace(":", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else s
