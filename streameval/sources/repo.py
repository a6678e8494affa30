"""Repository access: the bytes of a path at a commit, and line <-> byte offsets.

(``repodir`` serves a plain directory the same way; ``repocache`` finds an instance's
repository.)

This module is the only owner of ``git``: one long-lived ``git cat-file --batch`` per
repository serves every file read, and ``git ls-tree`` lists the regular files of a
commit once. Nothing is ever checked out, so one clone serves every base commit at once.
Paths only ever reach git on stdin as ``COMMIT:path`` (never as arguments), and only
after they were found in the commit's file list.

Raises ``RepoError`` (reason MISSING_REPO or MISSING_COMMIT) with a message that names
the repository and commit, so the person running streameval knows what to clone or fetch.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import subprocess
import threading
import weakref
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Protocol

from streameval.errors import Reason, RepoError
from streameval.sources.filecache import LRU, FileCache, LineIndex

log = logging.getLogger(__name__)

DEFAULT_MAX_COMMITS = 8                   # file lists kept per repository

_BAD_PATH_CHARS = ("\n", "\r", "\0")      # cannot travel on cat-file's line protocol
_INHERITED: list[Any] = []  # cat-file processes of a parent, kept untouched after a fork
_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")  # object ids (sha1, sha256)


# --------------------------------------------------------------------------- views

class _Source(Protocol):
    identity: str

    def _files(self, commit: str) -> frozenset[str]: ...
    def _directories(self, commit: str) -> frozenset[str]: ...
    def _is_file(self, commit: str, path: str) -> bool: ...
    def _read(self, commit: str, path: str) -> bytes | None: ...
    def _version(self, commit: str, path: str) -> Hashable: ...


class RepoView:
    """One repository at one commit (or a plain directory). Cheap to share."""

    key: tuple[str, str]  # (repository identity, commit or "") for cache keys

    def __init__(self, source: _Source, commit: str, cache: FileCache):
        self._source = source
        self._cache = cache
        self.commit = commit
        self.key = (source.identity, commit)
        #: a commit's file list never changes: kept here, a path lookup is a set lookup
        self._listing: frozenset[str] | None = None

    def __repr__(self) -> str:
        return f"RepoView({self.key[0]!r}, {self.commit[:12] or 'directory'!r})"

    def files(self) -> frozenset[str]:
        """Repo-relative paths of the regular files (computed once per commit)."""
        return self._source._files(self.commit)

    def is_dir(self, path: str) -> bool:
        """A directory of the repository: some regular file lies under it ("" is the root)."""
        return path == "" or path in self._source._directories(self.commit)

    def is_file(self, path: str) -> bool:
        if self.commit:
            if self._listing is None:
                self._listing = self._source._files(self.commit)
            return path in self._listing
        return self._source._is_file(self.commit, path)

    def version(self, path: str) -> Hashable:
        """What changes when the file's bytes may have (a plain directory's mtime and
        size; nothing for a commit, whose blobs never change): part of every cache key."""
        return self._source._version(self.commit, path)

    def read(self, path: str) -> bytes | None:
        """Bytes of the regular file ``path`` (repo-relative), or None if it is not one."""
        if not self.is_file(path):
            return None
        ck = (self.key, path, self._source._version(self.commit, path))
        data = self._cache.data.get(ck)
        if data is None:
            data = self._source._read(self.commit, path)
            if data is None:
                return None
            self._cache.data.put(ck, data)
        return data

    def num_lines(self, path: str) -> int | None:
        """Lines a reader sees (``LineIndex.num_lines``), None when not a regular file;
        from a cached index when there is one, else counted in the bytes."""
        if not self.is_file(path):
            return None
        ck = (self.key, path, self._source._version(self.commit, path))
        index = self._cache.lines.peek(ck)
        if index is not None:
            return index.num_lines
        data = self.read(path)
        if data is None:
            return None
        return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)

    def line_index(self, path: str) -> LineIndex | None:
        """Cached per (repo, commit, path); None when ``path`` is not a regular file."""
        listing = self._listing   # is_file, inline: asked for every file of every step
        if not (path in listing if listing is not None and self.commit else self.is_file(path)):
            return None
        ck = (self.key, path, self._source._version(self.commit, path))
        index = self._cache.lines.get(ck)
        if index is None:
            data = self.read(path)
            if data is None:
                return None
            index = LineIndex(data)
            self._cache.lines.put(ck, index)
        return index

    def resolve(self, path: str) -> str | None:
        """A predicted path -> repo-relative path (docs/metrics.md §2), or None.

        Strips quotes, white space, ``./`` and leading ``/``; tries the path, then
        with 1, 2, ... leading components dropped. Never escapes the repo.
        """
        rel = clean_predicted_path(path)
        if rel is None:
            return None
        parts = rel.split("/")
        for i in range(len(parts)):  # one lookup per component: O(components)
            candidate = "/".join(parts[i:])
            if self.is_file(candidate):
                return candidate
        return None


_STRIP = " \t\r\n\f\v'\"`"


def clean_predicted_path(path: str) -> str | None:
    """docs/metrics.md §2: the predicted path made relative and normal, or None.

    Normalizing happens *after* the leading ``/`` is gone, so ``/../x`` is the escape
    ``../x`` (rejected) rather than the root-clamped ``/x``.
    """
    s = path.strip(_STRIP).replace("\\", "/")  # Windows separators (as the evaluator)
    if not s or any(c in s for c in _BAD_PATH_CHARS):
        return None
    while s.startswith(("./", "/")):
        s = s[2:] if s.startswith("./") else s.lstrip("/")
    if not s:
        return None
    s = posixpath.normpath(s)
    if s in (".", "..") or s.startswith("../"):
        return None
    return s


def _is_clean_rel(path: str) -> bool:
    """A repo-relative path in normal form: what a file list can contain."""
    return (bool(path) and not path.startswith("/") and not any(c in path for c in _BAD_PATH_CHARS)
            and posixpath.normpath(path) == path and not path.startswith("../") and path != "..")


# --------------------------------------------------------------------------- git

class GitRepo:
    """A git repository (work tree or bare) read through ``git cat-file --batch``.

    One child process is started on first use and kept; requests are serialized by a
    lock and the process is restarted if it died. Never runs ``git checkout``.
    """

    def __init__(self, path: str | os.PathLike[str], cache: FileCache | None = None,
                 max_commits: int = DEFAULT_MAX_COMMITS):
        self.path = Path(path)
        self.identity = os.path.realpath(self.path)
        self._cache = cache if cache is not None else FileCache()
        self._check_is_git()
        self._lock = threading.Lock()
        self._proc_box: list[Any] = [None, os.getpid()]   # [process, pid of its owner]
        self._finalizer = weakref.finalize(self, _stop_process, self._proc_box)
        self._trees: LRU[str, frozenset[str]] = LRU(max_commits, lambda _: 1)
        self._dirs: LRU[str, frozenset[str]] = LRU(max_commits, lambda _: 1)
        self._commits: LRU[str, str] = LRU(4 * max_commits, lambda _: 1)
        #: ``ls-tree`` processes started ahead of need (``_start_listing``)
        self._listings: dict[str, subprocess.Popen[bytes]] = {}
        self._listing_lock = threading.Lock()
        self._drain = weakref.finalize(self, _drain_listings, self._listings)
        #: (commit, path) of files listed in the commit whose blob cannot be read (a
        #: partial clone lacks it): each is one unreadable file, never a failed run
        self.unreadable: set[tuple[str, str]] = set()
        self._absent: LRU[str, frozenset[str]] = LRU(max_commits, lambda _: 1)
        self._promisor = self._has_promisor()

    def __repr__(self) -> str:
        return f"GitRepo({self.identity!r})"

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", "-C", self.identity, *args], capture_output=True,
                              stdin=subprocess.DEVNULL, env=_git_env(), check=False)

    def _check_is_git(self) -> None:
        if not self.path.is_dir():
            raise RepoError(f"repository {self.path} does not exist or is not a directory",
                            Reason.MISSING_REPO)
        done = self._git("rev-parse", "--git-dir")
        if done.returncode != 0:
            msg = done.stderr.decode("utf-8", "replace").strip()
            raise RepoError(f"{self.path} is not a usable git repository: {msg}", Reason.MISSING_REPO)

    def _has_promisor(self) -> bool:
        """A partial clone: some blobs may be missing, and git would fetch them."""
        done = self._git("config", "--get-regexp", r"^remote\..*\.promisor$")
        return any(line.rpartition(b" ")[2].strip().lower() == b"true"
                   for line in done.stdout.splitlines())

    # ---- the cat-file process

    def _process(self) -> subprocess.Popen[bytes]:
        proc = self._proc_box[0]
        if proc is None or self._proc_box[1] != os.getpid() or proc.poll() is not None:
            _stop_process(self._proc_box)  # a dead one still holds its pipes
            proc = subprocess.Popen(
                ["git", "-C", self.identity, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=_git_env())
            self._proc_box[:] = [proc, os.getpid()]
        return proc

    def _request(self, spec: str) -> tuple[str, str, bytes] | None:
        """(oid, type, body) of one object name, or None if git says it is missing."""
        if any(c in spec for c in _BAD_PATH_CHARS):
            return None
        line = spec.encode("utf-8", "surrogateescape") + b"\n"
        with self._lock:
            for attempt in (1, 2):
                try:
                    return self._exchange(line)
                except (OSError, ValueError) as e:
                    _stop_process(self._proc_box)  # dead or out of step: start afresh
                    if attempt == 2:
                        raise RepoError(f"git cat-file failed in {self.identity}: {e}",
                                        Reason.MISSING_REPO) from e
        return None  # not reached

    def _exchange(self, line: bytes) -> tuple[str, str, bytes] | None:
        proc = self._process()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        proc.stdin.flush()
        header = proc.stdout.readline()
        if not header.endswith(b"\n"):
            raise OSError("git cat-file ended unexpectedly")
        fields = header.split()
        # found: "<oid> <type> <size>"; otherwise "<name> missing" / "<name> ambiguous"
        if len(fields) != 3 or not fields[2].isdigit() or not _HEX.fullmatch(fields[0]):
            return None
        size = int(fields[2])
        body = proc.stdout.read(size + 1)
        if len(body) != size + 1:
            raise OSError("git cat-file returned a short object")
        return fields[0].decode(), fields[1].decode(), body[:-1]

    def close(self) -> None:
        """Stop the cat-file process and any listing started ahead; a later request
        starts afresh."""
        with self._lock:
            _stop_process(self._proc_box)
        with self._listing_lock:
            _drain_listings(self._listings)

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- views

    def at(self, commit: str | None = None) -> RepoView:
        """The repository at ``commit`` (HEAD when None); RepoError(MISSING_COMMIT) if unknown."""
        spec = (commit or "HEAD").strip()
        sha = self._commits.get(spec)
        if sha is None:
            found = self._request(f"{spec}^{{commit}}") if spec and not spec.startswith("-") else None
            if found is None or found[1] != "commit":
                raise RepoError(
                    f"commit {commit or 'HEAD'} not found in repository {self.identity}; "
                    f"fetch it (git -C {self.identity} fetch origin {commit or 'HEAD'}) "
                    "or point --repos at a full clone", Reason.MISSING_COMMIT)
            sha = found[0]
            self._commits.put(spec, sha)
        self._start_listing(sha)
        return RepoView(self, sha, self._cache)

    def _start_listing(self, commit: str) -> None:
        """Start ``git ls-tree`` for a commit now, in the background: a run's first path
        lookup usually comes after its trace is parsed, and git lists meanwhile."""
        with self._listing_lock:
            if commit in self._listings or self._trees.peek(commit) is not None:
                return
            try:
                self._listings[commit] = subprocess.Popen(
                    ["git", "-C", self.identity, "ls-tree", "-r", "-z", "--full-tree", commit,
                     "--"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, env=_git_env())
            except OSError:
                pass   # listed in the foreground when first needed

    def _files(self, commit: str) -> frozenset[str]:
        files = self._trees.get(commit)
        if files is None:
            with self._listing_lock:
                proc = self._listings.pop(commit, None)
            if proc is not None:
                out, err = proc.communicate()
                code = proc.returncode
            else:
                done = self._git("ls-tree", "-r", "-z", "--full-tree", commit, "--")
                out, err, code = done.stdout, done.stderr, done.returncode
            if code != 0:
                msg = err.decode("utf-8", "replace").strip()
                raise RepoError(f"cannot list files of {commit} in {self.identity}: {msg}",
                                Reason.MISSING_COMMIT)
            files = frozenset(_parse_ls_tree(out))
            self._trees.put(commit, files)
        return files

    def _is_file(self, commit: str, path: str) -> bool:
        return path in self._files(commit)

    def _directories(self, commit: str) -> frozenset[str]:
        dirs = self._dirs.get(commit)
        if dirs is None:
            dirs = directories_of(self._files(commit))
            self._dirs.put(commit, dirs)
        return dirs

    def _read(self, commit: str, path: str) -> bytes | None:
        if (commit, path) in self.unreadable or path in self._missing_blobs(commit):
            return self._unreadable(commit, path, "its blob is not in this partial clone")
        try:
            found = self._request(f"{commit}:{path}")
        except RepoError as exc:
            # cat-file dies on an object it cannot produce: the file is unreadable,
            # the run goes on (the next request starts a fresh cat-file)
            return self._unreadable(commit, path, str(exc))
        if found is None or found[1] != "blob":
            return None
        return found[2]

    def _unreadable(self, commit: str, path: str, why: str) -> None:
        if (commit, path) not in self.unreadable:
            self.unreadable.add((commit, path))
            log.warning("%s: %s at %s cannot be read (%s); it counts as an unreadable file "
                        "(git -C %s fetch origin %s brings it)", self.identity, path,
                        commit[:12], why, self.identity, commit)
        return None

    def _missing_blobs(self, commit: str) -> frozenset[str]:
        """Paths of ``commit`` whose blobs a partial clone lacks, listed once without
        fetching anything (git would otherwise go to the network for each)."""
        if not self._promisor:
            return frozenset()
        absent = self._absent.get(commit)
        if absent is None:
            done = self._git("rev-list", "--objects", "--no-walk", "--missing=print", commit)
            missing = {line[1:].strip() for line in done.stdout.split(b"\n")
                       if line.startswith(b"?")}
            listing = self._git("ls-tree", "-r", "-z", "--full-tree", commit, "--").stdout
            absent = frozenset(path for oid, path in _parse_ls_tree_oids(listing)
                               if oid in missing)
            self._absent.put(commit, absent)
        return absent

    def _version(self, commit: str, path: str) -> Hashable:
        return ""  # a commit's blobs never change


_LS_TREE_FILE = re.compile(rb"(?:100644|100755) blob [0-9a-f]+\t([^\0\n\r]*)\0")


def directories_of(files: frozenset[str]) -> frozenset[str]:
    """Every directory some of ``files`` lie under (``a/b/c.py``: ``a``, ``a/b``)."""
    dirs: set[str] = set()
    for f in files:
        cut = f.rfind("/")
        while cut > 0 and f[:cut] not in dirs:
            dirs.add(f[:cut])
            cut = f.rfind("/", 0, cut)
    return frozenset(dirs)


def _parse_ls_tree(out: bytes) -> list[str]:
    """Regular files of ``ls-tree -r -z`` output: ``<mode> <type> <oid>\\t<path>\\0``
    (120000 symlinks and 160000 submodules are no files; a name with a line end cannot
    travel on cat-file's line protocol and is left out)."""
    if not out.endswith(b"\0"):
        out += b"\0"
    return [m.decode("utf-8", "surrogateescape") for m in _LS_TREE_FILE.findall(out)]


_LS_TREE_OID = re.compile(rb"(?:100644|100755) blob ([0-9a-f]+)\t([^\0\n\r]*)\0")


def _parse_ls_tree_oids(out: bytes) -> list[tuple[bytes, str]]:
    """(blob id, path) of the regular files of ``ls-tree -r -z`` output."""
    if not out.endswith(b"\0"):
        out += b"\0"
    return [(oid, p.decode("utf-8", "surrogateescape")) for oid, p in _LS_TREE_OID.findall(out)]


def _drain_listings(listings: dict[str, subprocess.Popen[bytes]]) -> None:
    """End listings nobody collected: their pipes closed, their processes reaped."""
    for proc in list(listings.values()):
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    listings.clear()


def _stop_process(box: list[Any]) -> None:
    proc, owner = box
    box[0] = None
    if proc is None:
        return
    if owner != os.getpid():
        # Forked child (replay workers): the process and its pipes belong to the parent.
        _INHERITED.append(proc)
        return
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    finally:
        if proc.stdout:
            proc.stdout.close()


def _git_env() -> dict[str, str]:
    # No pager, no prompts, no locale-dependent messages in our errors.
    # GIT_NO_LAZY_FETCH: a partial clone never goes to the network for a blob (git 2.45+;
    # older gits are kept off the network by ``_missing_blobs``)
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C",
            "GIT_NO_LAZY_FETCH": "1"}
