"""What a path under the watched root is: a trace by its name, and what is there now
(a file, nothing, something hidden, something else), asked without ever raising."""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

from streameval.traces.identity import SIDE_FILES
from streameval.traces.names import trace_patterns
from streameval.traces.parts import is_conversation

#: what ``watch`` follows by default: the adapters' file names (``traces.names``)
DEFAULT_GLOBS = trace_patterns()
#: names followed when their content turns out to be a known format (a Claude Code
#: session ``<uuid>.jsonl``); files that are not get one debug line. ``--glob`` replaces
#: both tuples: given patterns are traces, whatever their content.
SNIFF_GLOBS = ("*.jsonl", "*.json")


def is_trace(path: Path, globs: tuple[str, ...] = DEFAULT_GLOBS) -> bool:
    """A file ``watch`` follows (and ``backtest`` finds): its name or path matches a
    glob, and it is neither a side file nor a writer's temporary file."""
    name = path.name
    if name in SIDE_FILES or name.endswith(".tmp"):
        return False
    return any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(str(path), g) for g in globs)


def file_key(path: Path) -> tuple[int, int] | None:
    """(device, inode) of what is at ``path`` now: a trace renamed keeps it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def path_kind(path: Path) -> str:
    """"file", "missing", or "hidden": there but not visible now (a directory that lost
    its search permission, a symlink loop), which is neither followed nor taken for
    deleted; "other" for what is not a regular file (a FIFO, a directory)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError:
        return "hidden"
    if stat.S_ISDIR(st.st_mode) and is_conversation(path):
        return "file"   # an SDK conversation directory is one trace (traces.parts)
    return "file" if stat.S_ISREG(st.st_mode) else "other"
