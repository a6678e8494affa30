"""Finding the repository of a gold instance: clones named after the repository under
``--repos``, or the one ``--repo``; a bounded set of them kept open.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from streameval.errors import Reason, RepoError
from streameval.sources.filecache import DEFAULT_MAX_BYTES, FileCache
from streameval.sources.repo import GitRepo, RepoView
from streameval.sources.repodir import DirectoryRepo

if TYPE_CHECKING:
    from streameval.sources.gold import GoldInstance

DEFAULT_MAX_REPOS = 16                    # open `git cat-file` processes


def open_repo(path: str | os.PathLike[str], cache: FileCache | None = None) -> GitRepo | DirectoryRepo:
    """A git repo when ``path`` has ``.git`` or is a bare repository, else a directory."""
    p = Path(path)
    if (p / ".git").exists() or ((p / "HEAD").is_file() and (p / "objects").is_dir()):
        return GitRepo(p, cache)
    return DirectoryRepo(p, cache)


_ID_SUFFIX = re.compile(
    r"^(?P<slug>[^/\s]+?__[^/\s]+?)-(?:\d+|[0-9a-f]{7,40}(?:-v[0-9a-f]+)?)$")


def slug_from_instance_id(instance_id: str | None) -> str | None:
    """``django__django-12125`` / ``instance_NodeBB__NodeBB-<sha>-v<sha>`` -> ``owner__name``."""
    if not instance_id:
        return None
    s = instance_id.strip()
    if s.startswith("instance_"):
        s = s[len("instance_"):]
    m = _ID_SUFFIX.match(s)
    return m.group("slug") if m else None


def repo_named(instance_id: str | None) -> str | None:
    """The repository a SWE-bench-style instance id names (``django__django-12125`` ->
    ``django/django``), for a run no gold row names; None for another kind of id."""
    slug = slug_from_instance_id(instance_id)
    return slug.replace("__", "/", 1) if slug else None


def repo_dir_names(gold: GoldInstance) -> list[str]:
    """Directory names a clone of the gold row's repository may have, best first."""
    repo = (gold.repo or "").strip().rstrip("/")
    if repo.endswith(".git"):
        repo = repo[:-4]
    slugs = []
    if "/" in repo:
        owner, name = repo.split("/")[-2:]
        slugs.append(f"{owner}__{name}")
    from_id = slug_from_instance_id(gold.original_inst_id)
    if from_id is None and gold.original_inst_id is None:
        from_id = slug_from_instance_id(gold.instance_id)
    if from_id:
        slugs.append(from_id)
        if repo and "/" not in repo:  # bare name ("cli"): owner from the instance id
            slugs.append(f"{from_id.split('__', 1)[0]}__{repo}")
    names: list[str] = []
    for slug in slugs:
        names += [slug, f"github.com__{slug}"]
    if repo and "/" not in repo:
        names.append(repo)
    return list(dict.fromkeys(names))


class RepoCache:
    """Finds and keeps the repository of each gold instance.

    ``repos_dir`` holds clones named ``owner__repo`` or ``github.com__owner__repo``;
    ``repo`` is one explicit repository for single-instance use (it wins when given).
    At most ``max_repos`` repositories stay open; file bytes are shared and bounded.
    """

    def __init__(self, repos_dir: str | os.PathLike[str] | None = None,
                 repo: str | os.PathLike[str] | None = None, *,
                 max_repos: int = DEFAULT_MAX_REPOS, max_bytes: int = DEFAULT_MAX_BYTES):
        self.repos_dir = Path(repos_dir) if repos_dir is not None else None
        self.repo = Path(repo) if repo is not None else None
        self.cache = FileCache(max_bytes)
        self._max_repos = max(1, max_repos)
        self._open: OrderedDict[str, GitRepo | DirectoryRepo] = OrderedDict()
        self._lock = threading.Lock()

    def caches(self) -> list[tuple[str, object]]:
        """(name, cache with ``hits``/``misses``) pairs for the exporter's cache metrics."""
        return [("files", self.cache.data), ("line_index", self.cache.lines)]

    def view_for(self, gold: GoldInstance) -> RepoView:
        """The instance's repository at its base commit; RepoError says what to fix."""
        source = self._source(self._locate(gold))
        if isinstance(source, GitRepo):
            return source.at(gold.base_commit)
        return source.at(None)

    def check_gold(self, gold: GoldInstance, view: RepoView) -> None:
        """RepoError(GOLD_NOT_IN_REPO) when the gold names files and none of them is a
        file of ``view``: the numbers would be measured against a repository the gold
        is not about (a wrong ``--repo``/``--repos``, or a wrong commit), and a gold of
        no bytes gives symbol and span coverage 1.0 (docs/metrics.md §5b). The message
        names the repository tried and a gold path missing from it."""
        files = sorted({s.file for s in gold.gold_context})
        if not files or any(view.is_file(f) for f in files):
            return
        where = view.key[0] + (f" at {view.commit[:12]}" if view.commit else "")
        raise RepoError(
            f"none of the {len(files)} gold file(s) is in {where} "
            f"(e.g. {files[0]}); {self._gold_hint(gold, view)}", Reason.GOLD_NOT_IN_REPO)

    def _gold_hint(self, gold: GoldInstance, view: RepoView) -> str:
        """What to fix: ``--repos`` when ``--repo`` names a folder of clones, else the
        clone and its commit, else which repository ``--repo`` names."""
        if self.repo is not None and self.repos_dir is None:
            clone = _find_dir(self.repo, repo_dir_names(gold))
            if clone is not None:
                return (f"--repo {self.repo} holds clones ({clone.name}): pass "
                        f"--repos {self.repo} for a folder of clones")
        if view.commit:
            return (f"check that it is a clone of {gold.repo or 'the instance'} and that the "
                    f"gold's base commit {gold.base_commit or '?'} is right")
        if self.repo is not None:
            return ("--repo names the one repository of every instance: check it, or pass "
                    "--repos DIR for a folder of clones named owner__repo")
        return f"check that it is a copy of {gold.repo or 'the instance'}"

    def _locate(self, gold: GoldInstance) -> Path:
        if self.repo is not None:
            if not self.repo.is_dir():
                raise RepoError(f"--repo {self.repo}: no such directory", Reason.MISSING_REPO)
            return self.repo
        if self.repos_dir is None:
            raise RepoError(f"no repository for {gold.instance_id}: pass --repos DIR (clones named "
                            "owner__repo) or --repo PATH", Reason.MISSING_REPO)
        if not self.repos_dir.is_dir():
            raise RepoError(f"--repos {self.repos_dir}: no such directory", Reason.MISSING_REPO)
        names = repo_dir_names(gold)
        found = _find_dir(self.repos_dir, names)
        if found is None:
            tried = ", ".join(names) or "(no name: the gold row has no repo or instance id to go by)"
            hint = f"; clone it as {self.repos_dir / names[0]}" if names else ""
            raise RepoError(f"no clone of {gold.repo or '?'} for {gold.instance_id} in "
                            f"{self.repos_dir}: tried {tried}{hint}", Reason.MISSING_REPO)
        return found

    def _source(self, path: Path) -> GitRepo | DirectoryRepo:
        key = os.path.realpath(path)
        with self._lock:
            source = self._open.get(key)
            if source is not None:
                self._open.move_to_end(key)
                return source
            source = open_repo(path, self.cache)
            self._open[key] = source
            while len(self._open) > self._max_repos:
                _, old = self._open.popitem(last=False)
                old.close()
            return source

    def close(self) -> None:
        with self._lock:
            for source in self._open.values():
                source.close()
            self._open.clear()

    def __enter__(self) -> RepoCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _find_dir(root: Path, names: list[str]) -> Path | None:
    """First name that is a directory under ``root``; exact spelling, then any case."""
    for name in names:
        if (root / name).is_dir():
            return root / name
    try:
        by_lower = {e.name.lower(): e for e in os.scandir(root) if e.is_dir()}
    except OSError:
        return None
    for name in names:
        entry = by_lower.get(name.lower())
        if entry is not None:
            return Path(entry.path)
    return None
