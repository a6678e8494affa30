"""What the file watcher may watch under the root: everything, except what would stop it.

watchfiles watches a tree recursively and follows symbolic links; one directory it
cannot read (``chmod 000``) or one link into ``/proc`` or ``/sys`` makes it raise, and
an agent able to write into the watched root could keep the watcher down that way. So
the tree is walked first (links are never followed, a directory gone meanwhile is
skipped): with nothing in the way, the root is watched whole, as before; otherwise the
clean subtrees are watched recursively and the directories leading to a bad entry are
watched flat, so files appearing beside a bad entry are still seen. Each bad entry is
logged once. The periodic rescan (``walk_files``, which reads what it can) remains the
safety net for anything a watch misses.

A trace file that is a symbolic link is followed only when what it leads to is under
the root (``OutsideLinks``): ``DIR/r/trace.jsonl -> /elsewhere/trace.jsonl`` would have
the watcher read, score and show a file the agent could not have put there, as a
directory link would, and directory links are not followed. Such a link is logged
once; ``watch --follow-outside-links`` follows it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)


#: links said to lead outside the root, remembered to be said once (then forgotten)
SAID_MAX = 10_000


class OutsideLinks:
    """Whether a trace file may be followed: not a link, or a link whose target is under
    the root (``allow``: any link)."""

    def __init__(self, root: Path, allow: bool = False, say: bool = True):
        self.root = os.path.realpath(root)
        self.allow = allow
        #: False: said at DEBUG (the workers of ``watch --workers N`` but the first, so
        #: that what every worker sees is said once)
        self.say = say
        self._said: dict[str, None] = {}

    def allowed(self, path: Path) -> bool:
        """Whether a trace found at ``path`` is followed (checked when it is found)."""
        if self.allow or not os.path.islink(path):
            return True
        return self._inside(path, os.path.realpath(path))

    def opened(self, fd: int, path: str) -> bool:
        """Whether the file a poll opened as ``fd`` (at ``path``) may be read: what
        ``allowed`` said when the trace was found no longer holds once the file, or a
        folder on its path, is replaced by a link out of the root, and a poll opens what
        the path leads to now (102ce86 read it). So the file really opened is asked
        about: Linux names it (``/proc/self/fd``); elsewhere the path is resolved again."""
        if self.allow:
            return True
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = os.path.realpath(path)
        return self._inside(path, target)

    def _inside(self, path: Path | str, target: str) -> bool:
        """Whether ``target`` (where ``path`` leads) is under the root; said once when not."""
        if target == self.root or target.startswith(self.root.rstrip(os.sep) + os.sep):
            return True
        key = str(path)
        if key not in self._said:
            if len(self._said) >= SAID_MAX:
                self._said.pop(next(iter(self._said)))
            self._said[key] = None
            log.log(logging.WARNING if self.say else logging.DEBUG,
                    "watch: %s leads to %s, outside %s (a link); not followed "
                    "(--follow-outside-links follows it)", path, target, self.root)
        return False


class NotTraces:
    """Files named like traces (``SNIFF_GLOBS``) whose content was found to be none: not
    read again while they are the same file, grown at most (their head is what it was),
    read again once replaced or cut."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, int, int]] = {}   # path -> (device, inode, size)

    def add(self, path: Path) -> None:
        try:
            st = os.stat(path)
        except OSError:
            return
        self._seen[path] = (st.st_dev, st.st_ino, st.st_size)

    def known(self, path: Path) -> bool:
        seen = self._seen.get(path)
        if seen is None:
            return False
        try:
            st = os.stat(path)
        except OSError:
            return True
        if (st.st_dev, st.st_ino) == seen[:2] and st.st_size >= seen[2]:
            return True
        del self._seen[path]
        return False


@dataclass
class WatchSet:
    """Paths to watch recursively, paths to watch flat, and what was left out."""

    recursive: list[Path] = field(default_factory=list)
    flat: list[Path] = field(default_factory=list)
    left_out: dict[Path, str] = field(default_factory=dict)


def watch_set(root: Path, reported: set[Path] | None = None, say: bool = True) -> WatchSet:
    """The watch set of ``root``; bad entries not in ``reported`` are logged (once: the
    caller keeps the set; at DEBUG unless ``say``) and added to it."""
    reported = reported if reported is not None else set()
    bad = _bad_entries(Path(root))
    for path, why in sorted(bad.items()):
        if path not in reported:
            reported.add(path)
            log.log(logging.WARNING if say else logging.DEBUG,
                    "watch: %s %s; not watched (files beside it still are)", path, why)
    if not bad:
        return WatchSet(recursive=[Path(root)])
    spine = _spine(Path(root), bad)
    recursive = [path for d in sorted(spine) for path in _clean_children(d, spine, bad)]
    return WatchSet(recursive=recursive, flat=sorted(spine), left_out=bad)


def _bad_entries(root: Path) -> dict[Path, str]:
    """Directories that cannot be read and links to directories, with why."""
    bad: dict[Path, str] = {}

    def unreadable(exc: OSError) -> None:
        if exc.filename is not None:
            bad[Path(exc.filename)] = f"cannot be read ({exc.strerror or exc})"

    for dirpath, dirnames, _files in os.walk(root, onerror=unreadable):
        for name in dirnames:
            path = Path(dirpath) / name
            if os.path.islink(path):
                bad[path] = f"a link to {os.path.realpath(path)} (links are not followed)"
    bad.pop(root, None)   # the root itself is the caller's to check
    return bad


def _spine(root: Path, bad: dict[Path, str]) -> set[Path]:
    """The directories from the root down to each bad entry's parent."""
    spine: set[Path] = set()
    for path in bad:
        parent = path.parent
        while parent not in spine:
            spine.add(parent)
            if parent == root or parent == parent.parent:
                break
            parent = parent.parent
    return spine


def _clean_children(d: Path, spine: set[Path], bad: dict[Path, str]) -> list[Path]:
    """Subdirectories of ``d`` with no bad entry below them."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return []
    out = []
    for entry in entries:
        path = Path(entry.path)
        if path in spine or path in bad or entry.is_symlink():
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                out.append(path)
        except OSError:
            continue
    return out
