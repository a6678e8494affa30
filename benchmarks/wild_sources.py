"""The wild survey's manifest and the local git mirrors it points into.

``benchmarks/wild/manifest.tsv`` names, per source, a repository, a commit and path
globs. The files are read out of the bare mirrors the ``fetch`` tool leaves under
``<mirrors>/<owner>+<name>/repo`` with ``git ls-tree``/``git cat-file``: the survey
never touches the network, and a commit pins exactly which bytes were measured, so
the figures in ``benchmarks/wild/README.md`` can be reproduced by anyone holding the
same mirrors.

A manifest row::

    source  repo  commit  licence  unit  hint  pattern

- ``pattern``: an ``fnmatch`` glob over repository paths (``*`` also crosses ``/``);
  a pattern starting with ``!`` removes matches of earlier rows of the same source
  (files already in ``tests/fixtures/real``, which the survey must not count);
- ``unit``: ``file`` (one trace file) or ``events-dir`` (an OpenHands SDK
  conversation directory: the pattern matches its ``event-*.json`` files, grouped by
  directory, one trace per directory);
- ``hint``: the streameval format a person would pass with ``--format`` (used only to
  show what a forced format gives when detection fails).
"""

from __future__ import annotations

import csv
import fnmatch
import posixpath
import subprocess
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS = ("source", "repo", "commit", "licence", "unit", "hint", "pattern")


@dataclass
class Row:
    """One manifest line."""

    source: str
    repo: str
    commit: str
    licence: str
    unit: str
    hint: str
    pattern: str


@dataclass
class Trace:
    """One surveyed trace: a file, or a conversation directory of event files."""

    source: str
    repo: str
    commit: str
    path: str  # the file, or the directory holding the events
    unit: str
    hint: str
    blobs: list[tuple[str, str, int]] = field(default_factory=list)  # (path, sha, size)

    @property
    def size(self) -> int:
        return sum(s for _, _, s in self.blobs)


def read_manifest(path: Path) -> list[Row]:
    """Rows of the manifest; lines starting with ``#`` are comments."""
    rows: list[Row] = []
    with open(path, encoding="utf-8", newline="") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.startswith("#")]
    for rec in csv.DictReader(lines, delimiter="\t"):
        rows.append(Row(**{k: (rec.get(k) or "").strip() for k in COLUMNS}))
    return rows


def git_dir(mirrors: Path, repo: str) -> Path:
    """Where ``fetch`` puts a repository's bare git directory."""
    return mirrors / repo.replace("/", "+") / "repo"


def ls_tree(gdir: Path, commit: str) -> list[tuple[str, str, int]]:
    """(path, blob sha, size) of every blob at ``commit``; blobs the snapshot lacks
    (files of 4 MiB and more: git prints "-" or "BAD") have size -1."""
    out = subprocess.run(["git", "--git-dir", str(gdir), "ls-tree", "-r", "-l", "-z", commit],
                         check=True, capture_output=True).stdout
    entries = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        _mode, kind, sha, size = meta.split()
        if kind != b"blob":
            continue
        entries.append((name.decode("utf-8", "replace"), sha.decode(),
                        int(size) if size.isdigit() else -1))
    return entries


def expand(rows: list[Row], mirrors: Path) -> list[Trace]:
    """Every trace the manifest names, in manifest order (exclusions applied)."""
    traces: OrderedDict[tuple[str, str], Trace] = OrderedDict()
    trees: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
    for row in rows:
        key = (row.repo, row.commit)
        if key not in trees:
            trees[key] = ls_tree(git_dir(mirrors, row.repo), row.commit)
        if row.pattern.startswith("!"):
            pat = row.pattern[1:]
            for k in [k for k, t in traces.items()
                      if t.source == row.source and fnmatch.fnmatchcase(t.path, pat)]:
                del traces[k]
            continue
        for path, sha, size in trees[key]:
            if not fnmatch.fnmatchcase(path, row.pattern):
                continue
            where = posixpath.dirname(path) if row.unit == "events-dir" else path
            t = traces.get((row.source, where))
            if t is None:
                t = traces[(row.source, where)] = Trace(row.source, row.repo, row.commit,
                                                        where, row.unit, row.hint)
            t.blobs.append((path, sha, size))
    return list(traces.values())


class BlobReader:
    """``git cat-file --batch`` on one mirror: blob bytes by sha, one process per repo."""

    def __init__(self, gdir: Path):
        self.proc = subprocess.Popen(["git", "--git-dir", str(gdir), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, sha: str) -> bytes | None:
        """The blob, or None when the snapshot lacks it."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sha.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            return None
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)  # the newline after the object
        return data

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def materialise(trace: Trace, reader: BlobReader, tmp: Path) -> Path | None:
    """Write a trace's bytes under ``tmp`` (a file, or a directory of event files,
    keeping base names so instance ids derived from names stay the same); None when
    a blob is missing from the snapshot."""
    base = tmp / f"{abs(hash((trace.source, trace.path))):x}"
    base.mkdir(parents=True, exist_ok=True)
    if trace.unit == "events-dir":
        target = base / posixpath.basename(trace.path)
        target.mkdir(exist_ok=True)
    for path, sha, _size in trace.blobs:
        data = reader.read(sha)
        if data is None:
            return None
        dest = (target if trace.unit == "events-dir" else base) / posixpath.basename(path)
        dest.write_bytes(data)
        if trace.unit != "events-dir":
            return dest
    return target


__all__ = ["Row", "Trace", "read_manifest", "git_dir", "ls_tree", "expand", "BlobReader",
           "materialise"]
