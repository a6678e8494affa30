"""Carry what a command changed in the plain copy into the tagged copy.

Commands run in the plain copy only, so the agent's edits happen exactly as they
happened (sed -i, python scripts, heredocs, git stash...). After each command the plain
tree is compared with the last snapshot (stat data: mtime, size, inode, mode); every
changed text file is diffed line by line against its previous state (the tagged copy
without its tags): an unchanged line keeps its id, a new line gets the file's "agent"
id. One exception: a file whose bytes are again exactly the base commit's (``git
checkout -- f``, ``git stash``) gets its base ids back, since git restored the base file.

The diff is ``difflib``'s longest-matching-blocks (junk heuristic off) after the common
head and tail are taken off: deterministic, and for the usual few-line edit the same
as any other line diff. Where an edit re-creates a line identical to one it removed,
the diff decides which of them is "kept": that ambiguity is in the truth itself, and the
report names it (false credits of lines whose text the agent re-wrote in place).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from truth.layout import Layout, text_of, walk
from truth.tags import lines_of, split_line_end, tag_lines, untag_file

Stat = tuple[str, int, int, int, int]


def snapshot(root: Path) -> dict[str, Stat]:
    """(kind, mtime_ns, size, inode, mode) of every path under ``root`` but ``.git``."""
    snap: dict[str, Stat] = {}
    for rel, kind in walk(root):
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue
        snap[rel] = (kind, st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
    return snap


@dataclass
class Carried:
    """What one carry did (for the report: which files the command changed)."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


class Carrier:
    """Keeps the tagged copy in step with the plain copy of one layout."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.snap = snapshot(layout.plain)

    def carry(self) -> Carried:
        new = snapshot(self.layout.plain)
        old = self.snap
        done = Carried()
        for rel in sorted((p for p in old if p not in new), key=len, reverse=True):
            self._remove(rel)
            done.removed.append(rel)
        for rel, st in new.items():   # parents before children (walk order)
            before = old.get(rel)
            if before == st:
                continue
            if before is not None and before[0] != st[0]:
                self._remove(rel)
            self._update(rel, st[0])
            if st[0] == "f":
                done.changed.append(rel)
        self.snap = new
        return done

    # ------------------------------------------------------------------ pieces
    def _remove(self, rel: str) -> None:
        dst = self.layout.tagged / rel
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        elif dst.is_dir():
            shutil.rmtree(dst)

    def _update(self, rel: str, kind: str) -> None:
        src, dst = self.layout.plain / rel, self.layout.tagged / rel
        if kind == "d":
            dst.mkdir(parents=True, exist_ok=True)
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        if kind == "l":
            if dst.is_symlink() or dst.exists():
                self._remove(rel)
            os.symlink(os.readlink(src), dst)
            return
        try:
            data = src.read_bytes()
        except OSError:
            return
        text = text_of(data)
        if text is None:
            if dst.is_symlink():
                dst.unlink()
            shutil.copyfile(src, dst)
        else:
            ids = self._ids(rel, data, lines_of(text))
            if dst.is_symlink():
                dst.unlink()
            dst.write_text(tag_lines(lines_of(text), ids, self.layout.table),
                           encoding="utf-8", newline="")
        shutil.copymode(src, dst)

    def _ids(self, rel: str, data: bytes, new_lines: list[str]) -> list[int]:
        layout = self.layout
        if layout.base_digest.get(rel) == hashlib.sha1(data).hexdigest():
            base = layout.base_ids(rel)
            if base is not None and len(base) == len(new_lines):
                return base
        agent = layout.table.agent(rel)
        old_lines, old_ids = self._previous(rel)
        return line_diff_ids(old_lines, old_ids, new_lines, agent)

    def _previous(self, rel: str) -> tuple[list[str], list[int | None]]:
        dst = self.layout.tagged / rel
        if dst.is_symlink() or not dst.is_file():
            return [], []
        text = text_of(dst.read_bytes())
        if text is None:
            return [], []
        return untag_file(text, self.layout.table)


def line_diff_ids(old_lines: list[str], old_ids: list[int | None], new_lines: list[str],
                  agent: int) -> list[int]:
    """Ids of ``new_lines``: those of the old lines a line diff keeps, else ``agent``."""
    ids = [agent] * len(new_lines)
    # a line is the same line whatever its end: appending after a last line that had
    # no newline, or CRLF -> LF, does not make it the agent's
    old_lines = [split_line_end(x)[0] for x in old_lines]
    new_lines = [split_line_end(x)[0] for x in new_lines]
    n_old, n_new = len(old_lines), len(new_lines)
    head = 0
    while head < n_old and head < n_new and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (tail < n_old - head and tail < n_new - head
           and old_lines[n_old - 1 - tail] == new_lines[n_new - 1 - tail]):
        tail += 1
    for k in range(head):
        ids[k] = old_ids[k] if old_ids[k] is not None else agent
    for k in range(tail):
        got = old_ids[n_old - 1 - k]
        ids[n_new - 1 - k] = got if got is not None else agent
    a, b = old_lines[head:n_old - tail], new_lines[head:n_new - tail]
    if a and b:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for i, j, size in matcher.get_matching_blocks():
            for k in range(size):
                got = old_ids[head + i + k]
                ids[head + j + k] = got if got is not None else agent
    return ids
