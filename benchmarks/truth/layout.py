"""Lay out a base commit twice: a plain copy the commands run in, and a tagged copy.

The plain copy is what the agent had: the commit's files written by ``git
checkout-index`` from a throw-away ``.git`` whose objects come from the mirror by
``alternates`` (nothing is cloned, the mirror is never written), so ``git diff``,
``git status``, ``git stash`` and ``git checkout -- f`` behave in it as they did for
the agent. ``checkout-index`` and not ``git archive``: an archive applies
``export-ignore``/``export-subst``, which a checkout (the agent's tree) does not.

The tagged copy holds the same tree, every line of every UTF-8 text file tagged with
the id of (path, base line) (``tags``); binary and non-UTF-8 files are copied untagged.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from truth.tags import IdTable, tag_text

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
           "GIT_AUTHOR_NAME": "truth", "GIT_AUTHOR_EMAIL": "truth@example.invalid",
           "GIT_COMMITTER_NAME": "truth", "GIT_COMMITTER_EMAIL": "truth@example.invalid"}


def git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=check)


def text_of(data: bytes) -> str | None:
    """The file's text when it is UTF-8 without NUL bytes (those are tagged), else None."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass
class Layout:
    """The two copies of one base commit and what the tags mean."""

    plain: Path
    tagged: Path
    table: IdTable
    #: sha1 of each text file's base bytes: a file put back to exactly these bytes (``git
    #: checkout -- f``, ``git stash``) has its base lines again, not the agent's
    base_digest: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def base_ids(self, path: str) -> list[int] | None:
        try:
            k = self.table.paths.index(path)
        except ValueError:
            return None
        start = self.table.starts[k]
        return list(range(start, start + self.table.counts[k]))


def lay_out(gitdir: Path, commit: str, work: Path) -> Layout:
    """Both copies of ``commit`` of the repository at ``gitdir`` under ``work``."""
    plain, tagged = work / "plain", work / "tagged"
    for d in (plain, tagged):
        if d.exists():
            shutil.rmtree(d)
    plain.mkdir(parents=True)
    tagged.mkdir(parents=True)
    objects = _objects_dir(gitdir)
    git("init", "-q", str(plain))
    dotgit = plain / ".git"
    (dotgit / "objects" / "info" / "alternates").write_text(str(objects) + "\n")
    (dotgit / "HEAD").write_text(commit + "\n")
    git("read-tree", "HEAD", cwd=plain)
    # a snapshot may lack its largest blobs: checkout-index writes the rest
    git("checkout-index", "-a", "-f", "-u", cwd=plain, check=False)   # -u: stat data
    listed = git("ls-files", "-z", cwd=plain).stdout.decode(errors="replace").split("\0")
    missing = [p for p in listed if p and not os.path.lexists(plain / p)]
    layout = Layout(plain, tagged, IdTable(), missing=missing)
    _tag_tree(layout)
    return layout


def _objects_dir(gitdir: Path) -> Path:
    for cand in (gitdir / "objects", gitdir / ".git" / "objects"):
        if cand.is_dir():
            return cand.resolve()
    raise FileNotFoundError(f"{gitdir}: no objects directory")


def _tag_tree(layout: Layout) -> None:
    """Copy the plain tree into the tagged one; text files get tagged lines."""
    texts: list[tuple[str, str, int]] = []
    for rel, kind in walk(layout.plain):
        src, dst = layout.plain / rel, layout.tagged / rel
        if kind == "d":
            dst.mkdir(exist_ok=True)
        elif kind == "l":
            os.symlink(os.readlink(src), dst)
        else:
            data = src.read_bytes()
            text = text_of(data)
            if text is None:
                shutil.copy2(src, dst)
                continue
            layout.base_digest[rel] = hashlib.sha1(data).hexdigest()
            texts.append((rel, text, _count_lines(text)))
    table = layout.table
    firsts = [table.add_file(rel, n) for rel, _, n in texts]
    table.freeze()
    for (rel, text, _), first in zip(texts, firsts):
        dst = layout.tagged / rel
        dst.write_text(tag_text(text, first, table)[0], encoding="utf-8", newline="")
        shutil.copymode(layout.plain / rel, dst)


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def walk(root: Path) -> list[tuple[str, str]]:
    """(relative path, kind) of everything under ``root`` but its top ``.git``, parents
    before children; kind is ``d`` (directory), ``l`` (symlink) or ``f`` (file)."""
    out: list[tuple[str, str]] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = sorted(os.scandir(root / rel if rel else root), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            path = f"{rel}/{e.name}" if rel else e.name
            if path == ".git":
                continue
            if e.is_symlink():
                out.append((path, "l"))
            elif e.is_dir():
                out.append((path, "d"))
                subdirs.append(path)
            elif e.is_file():
                out.append((path, "f"))
        stack.extend(reversed(subdirs))
    return out
