"""A path as a trace wrote it -> a repo-relative path at the base commit (docs/metrics.md §2, 6).

Agents name files relative to their working directory, absolutely inside a container
(``/testbed/...``, ``/workspace/<repo>/...``, ``/tmp/gh-issue-solver-123/...``), or
relative after a ``cd``. The mapper joins relative paths with the call's cwd, refuses
paths that cannot be repo files (``..`` escapes out of the known roots, system
directories, installed packages), and resolves the rest with ``RepoView.resolve``:
the path, then the path with 1, 2, ... leading components dropped, until a regular
file of the base commit matches (docs/metrics.md §2).

Agents on Windows (Codex Desktop, PowerShell) name files ``C:\\Users\\me\\repo\\src\\x.ts``
or ``src\\x.ts`` from a ``C:\\...`` working directory. Such paths are put in one POSIX
form before anything else (``posix_form``): ``/c:/Users/me/repo/src/x.ts`` (the drive
letter lower-cased: Windows does not tell ``C:`` from ``c:``), backslashes read as
separators only where the path or its working directory is a Windows one. So a Windows
working directory is a root like any other, and a path under it resolves to the same
repository file as on a POSIX machine. Dot-directories of a Windows user's profile
(``C:\\Users\\me\\.codex\\...``), like ``~/...``, and the system's own folders are outside.

Reads of paths outside the repo are ignored (section 6) but counted, by reason:
``PATH_OUTSIDE_REPO`` for paths that cannot be in it, ``PATH_NOT_IN_REPO`` for paths
that could but name no base-commit file (new files, typos, directories).
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from streameval.errors import Reason
from streameval.model import Step

if TYPE_CHECKING:
    from streameval.sources.repo import RepoView

__all__ = ["PathMapper", "display_path", "resolve_step", "posix_form", "is_windows_path",
           "below"]

#: absolute prefixes that never hold the repository under evaluation
_SYSTEM = ("/etc/", "/usr/", "/proc/", "/sys/", "/dev/", "/bin/", "/sbin/", "/lib/", "/lib64/",
           "/opt/", "/var/", "/run/", "/boot/", "/snap/", "/nix/")
_PACKAGES = re.compile(r"/(?:site-packages|dist-packages|node_modules|\.venv|venv|\.tox)/")
#: container workspace layouts stripped for display when no repo is known
_WORKSPACE = re.compile(r"^/(?:testbed|repo|app|src|code)(?:/|$)|^/workspace/[^/]+/|^/workspace/")

_CACHE_SIZE = 8192

#: ``C:\\...`` or ``C:/...``: a Windows absolute path (a drive letter, then a separator)
_DRIVE = re.compile(r"^([A-Za-z]):[\\/]")
#: Git Bash's spelling of a drive (``/c/Users/...``), read as one only beside a Windows cwd
_MSYS = re.compile(r"^/([A-Za-z])/")
#: the POSIX form of one (``posix_form``)
_WINDOWS_FORM = re.compile(r"^/[a-z]:(?:/|$)")
#: Windows places that never hold the repository: the system's folders, and the
#: dot-directories and AppData of a user's profile (``~/.codex``, ``~/.agents``...)
_WINDOWS_OUTSIDE = re.compile(
    r"^/[a-z]:/(?:windows|program files(?: \(x86\))?|programdata)(?:/|$)|"
    r"^/[a-z]:/users/[^/]+/(?:\.[^/]+|appdata)(?:/|$)", re.IGNORECASE)


def is_windows_path(path: str | None) -> bool:
    """A Windows absolute path (``C:\\x``, ``c:/x``)."""
    return bool(path) and _DRIVE.match(path) is not None


def posix_form(path: str, windows: bool = False) -> str:
    """A Windows path in the POSIX form the mapper works in: ``C:\\a\\b`` is
    ``/c:/a/b``; with ``windows`` (the call runs in a Windows directory) a relative
    ``a\\b`` is ``a/b`` and Git Bash's ``/c/a/b`` is ``/c:/a/b``. Any other path is
    returned as it is: on POSIX a backslash is a character of a name."""
    drive = _DRIVE.match(path)
    if drive is not None:
        return f"/{drive.group(1).lower()}:/" + path[3:].replace("\\", "/")
    if windows:
        msys = _MSYS.match(path)   # Git Bash's /c/Users/...: the same drive
        if msys is not None:
            return f"/{msys.group(1).lower()}:/" + path[3:]
        if "\\" in path:
            return path.replace("\\", "/")
    return path


def below(full: str, root: str) -> str | None:
    """``full`` relative to ``root`` ("." for the root itself), None when not under it.
    Windows paths (``/c:/...``) compare without regard to case, as Windows does."""
    if _WINDOWS_FORM.match(root) and _WINDOWS_FORM.match(full):
        low, low_root = full.lower(), root.lower()
        if low == low_root:
            return "."
        return full[len(root) + 1:] if low.startswith(low_root + "/") else None
    if full == root:
        return "."
    return full[len(root) + 1:] if full.startswith(root + "/") else None


def display_path(path: str, roots: Iterable[str] = ()) -> str:
    """Best-effort repo-relative form without a repo (``inspect``): strip known prefixes."""
    p = posixpath.normpath(path.strip().strip("'\"`")) if path.strip() else path
    for root in sorted((r.rstrip("/") for r in roots if r), key=len, reverse=True):
        rel = below(p, root)
        if rel is not None:
            return rel
    stripped = _WORKSPACE.sub("", p, count=1)
    while stripped.startswith("./"):
        stripped = stripped[2:]
    if not stripped and _WORKSPACE.match(p):
        return "."  # a workspace root such as /testbed itself
    return stripped.lstrip("/") or p


class PathMapper:
    """Trace paths -> repo paths, cached per (path, cwd), counting what was refused.

    ``roots`` are absolute directories known to be the repository's root in the run
    (the run's cwd, ``/testbed``...): a ``..`` that leaves every root is an escape.
    """

    def __init__(self, view: RepoView | None = None, roots: Iterable[str] = ()):
        self._view = view
        self._roots: list[str] = []
        self._cache: OrderedDict[tuple[str, str | None], tuple[str | None, Reason | None]] = \
            OrderedDict()
        for r in roots:
            self.add_root(r)
        #: how many lookups were refused, by reason (cache hits count again)
        self.counts: Counter[Reason] = Counter()

    @property
    def roots(self) -> tuple[str, ...]:
        return tuple(self._roots)

    def add_root(self, root: str | None) -> None:
        """A directory known to be the repo root (e.g. ``RunInfo.cwd``)."""
        root = posix_form(root) if root else root
        if root and root.startswith("/"):
            norm = posixpath.normpath(root)
            if norm != "/" and norm not in self._roots:
                self._roots.append(norm)
                self._cache.clear()

    def to_repo(self, path: str, cwd: str | None = None) -> str | None:
        """The repo path ``path`` names, or None (counted in ``counts``)."""
        return self.lookup(path, cwd)[0]

    def lookup(self, path: str, cwd: str | None = None,
               count: bool = True) -> tuple[str | None, Reason | None]:
        """``(repo path, None)`` or ``(None, reason)``; without a repo, a display path.

        ``count=False`` for lookups that are not reads (an edit creating a new file is
        not a read outside the repo).
        """
        key = (path, cwd)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compute(path, cwd)
            self._cache[key] = hit
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        if hit[1] is not None and count:
            self.counts[hit[1]] += 1
        return hit

    def names_directory(self, path: str, cwd: str | None = None) -> bool:
        """Whether a path that names no repo file names a directory of the repository
        (its root included): such a read is inside the repository, not outside it
        (``mostly_outside_repo``, docs/metrics.md §5b). Found as files are (§2): under
        a known root, else with 1, 2, ... leading components dropped; without a repo,
        only a workspace root is known to be one."""
        p = path.strip().strip("'\"`").strip() if isinstance(path, str) else ""
        if not p or "\x00" in p or p.startswith("~"):
            return False
        if cwd and is_windows_path(cwd) or is_windows_path(p):
            p, cwd = posix_form(p, windows=True), posix_form(cwd) if cwd else cwd
        full = self._absolute(p, cwd)
        if full is None:
            return False
        if self._view is None:
            return display_path(full, self._roots) in (".", "")
        for root in self._roots:
            rel = below(full, root)
            if rel is not None:
                return self._view.is_dir("" if rel == "." else rel)
        parts = [c for c in full.split("/") if c and c != "."]
        return any(self._view.is_dir("/".join(parts[i:])) for i in range(len(parts)))

    # ------------------------------------------------------------------ rules
    def _compute(self, path: str, cwd: str | None) -> tuple[str | None, Reason | None]:
        p = path.strip().strip("'\"`").strip() if isinstance(path, str) else ""
        if not p or "\x00" in p:
            return None, Reason.PATH_NOT_IN_REPO
        if cwd and is_windows_path(cwd) or is_windows_path(p):
            p, cwd = posix_form(p, windows=True), posix_form(cwd) if cwd else cwd
        if p.startswith("~"):
            return None, Reason.PATH_OUTSIDE_REPO
        full = self._absolute(p, cwd)
        if full is None:
            return None, Reason.PATH_OUTSIDE_REPO
        if full.startswith("/") and self._outside(full, ".." in p.split("/"), cwd):
            return None, Reason.PATH_OUTSIDE_REPO
        if self._view is None:
            shown = display_path(full, self._roots)
            if shown in (".", ""):  # the workspace root itself is a directory, never a file
                return None, Reason.PATH_NOT_IN_REPO
            return shown, None
        return self._resolve(full)

    def _absolute(self, p: str, cwd: str | None) -> str | None:
        """Join with the cwd; None for a relative ``..`` that climbs out with no cwd."""
        if not p.startswith("/") and cwd:
            p = posixpath.join(cwd, p)
        norm = posixpath.normpath(p)
        if norm == ".." or norm.startswith("../"):
            return None
        return norm

    def _outside(self, full: str, escaped: bool, cwd: str | None) -> bool:
        """Cannot be a repo file: left every root by ``..``, or a system/package path.

        Under a root, or under the call's own cwd (a run in ``/var/www/app``), a path
        is never refused by prefix.
        """
        if self._under_root(full):
            return False
        if escaped and self._roots:
            return True   # a `..` that left every known root
        if not escaped and cwd and cwd.startswith("/") and cwd.rstrip("/") and \
                full.startswith(cwd.rstrip("/") + "/"):
            return False
        probe = full + "/"
        return probe.startswith(_SYSTEM) or bool(_PACKAGES.search(probe)) or full == "/" \
            or _WINDOWS_OUTSIDE.match(full) is not None

    def _under_root(self, full: str) -> bool:
        return any(below(full, r) is not None for r in self._roots)

    def _resolve(self, full: str) -> tuple[str | None, Reason | None]:
        view = self._view
        for root in self._roots:   # a path under a known root: exact first
            rel = below(full, root)
            if rel is not None and rel != ".":
                if view.is_file(rel):
                    return rel, None
        found = view.resolve(full)
        if found is not None:
            return found, None
        return None, Reason.PATH_NOT_IN_REPO


def resolve_step(view: Any, step: Step, cache: dict[str, str | None]) -> Step:
    """A step a trace states itself (unified ``pred_steps``, mini-swe-agent context blocks):
    its paths as written -> repo paths (docs/metrics.md §2); unresolved ones dropped.
    Replay and the session share it, so both resolve stated steps alike."""
    if step.symbols is None and len(set(step.files)) == len(step.files):
        for p in (*step.spans, *step.files):
            if p not in cache:
                cache[p] = view.resolve(p)
            if cache[p] != p:
                break
        else:
            return step   # every path a repository path already (as a rule): nothing to do

    def resolve(p: str) -> str | None:   # (made past the usual case: a closure per call)
        if p not in cache:
            cache[p] = view.resolve(p)
        return cache[p]

    files = tuple(dict.fromkeys(r for r in map(resolve, step.files) if r is not None))
    spans: dict[str, list[tuple[int, int]]] = {}
    for path, ranges in step.spans.items():
        r = resolve(path)
        if r is not None:
            spans.setdefault(r, []).extend(ranges)
    # docs/metrics.md §4b: a file with no names, or one that is not a repository file,
    # names nothing; a map left empty gives way to the symbols of the step's spans
    symbols: dict[str, list[str]] = {}
    for path, names in (step.symbols or {}).items():
        r = resolve(path) if names else None
        if r is not None:
            symbols.setdefault(r, []).extend(names)
    return Step(files=files, spans=spans, symbols=symbols or None, call_id=step.call_id,
                timestamp=step.timestamp)
