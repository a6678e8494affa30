"""A plain directory as a repository: what is on disk now, with no commits.

``--repo`` may name a directory that is not a git clone (the bundled example, a copy of
a sandbox). Paths are confined to the directory: a symlink out of it, or ``..``, never
names a file.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path

from streameval.errors import Reason, RepoError
from streameval.sources.filecache import FileCache
from streameval.sources.repo import RepoView, _is_clean_rel, directories_of


class DirectoryRepo:
    """A plain directory as a repository (no commits): what is on disk now.

    A path is a repo file when it names a regular file whose real path lies inside the
    root, so a symlink out of the tree (or ``..``) never reaches outside files.
    """

    def __init__(self, path: str | os.PathLike[str], cache: FileCache | None = None):
        self.path = Path(path)
        self.identity = os.path.realpath(self.path)
        if not os.path.isdir(self.identity):
            raise RepoError(f"directory {self.path} does not exist", Reason.MISSING_REPO)
        self._cache = cache if cache is not None else FileCache()
        self._listing: frozenset[str] | None = None
        self._dirs: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"DirectoryRepo({self.identity!r})"

    def at(self, commit: str | None = None) -> RepoView:
        """The directory as it is; ``commit`` is ignored (a directory has none)."""
        return RepoView(self, "", self._cache)

    def close(self) -> None:
        """Nothing to release; present so every repository closes the same way."""

    def __enter__(self) -> DirectoryRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _real(self, path: str) -> str | None:
        if not _is_clean_rel(path):
            return None
        real = os.path.realpath(os.path.join(self.identity, path))
        if not real.startswith(self.identity.rstrip(os.sep) + os.sep):
            return None
        return real if os.path.isfile(real) else None

    def _files(self, commit: str) -> frozenset[str]:
        """Walked once and kept: the directory stands for a base commit, so the files
        it had when first asked are its files (a path is then one set lookup, however
        many unknown paths a search output names); their bytes are read when asked."""
        if self._listing is None:
            found = []
            for dirpath, dirnames, filenames in os.walk(self.identity):
                dirnames[:] = [d for d in dirnames if d != ".git"]
                rel_dir = os.path.relpath(dirpath, self.identity)
                for name in filenames:
                    rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
                    if self._real(rel):
                        found.append(rel)
            self._listing = frozenset(found)
        return self._listing

    def _is_file(self, commit: str, path: str) -> bool:
        return path in self._files(commit)

    def _directories(self, commit: str) -> frozenset[str]:
        if self._dirs is None:
            self._dirs = directories_of(self._files(commit))
        return self._dirs

    def _read(self, commit: str, path: str) -> bytes | None:
        real = self._real(path) if path in self._files(commit) else None
        if real is None:
            return None
        try:
            with open(real, "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def _version(self, commit: str, path: str) -> Hashable:
        real = self._real(path)
        try:
            st = os.stat(real) if real else None
        except OSError:
            st = None
        return (st.st_mtime_ns, st.st_size) if st else None
