"""Build small, real git repositories for tests (no mocks of repo access)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "streameval-tests", "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "streameval-tests", "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.environ.get("HOME", "/tmp"),
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, env=_ENV,
                          capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, *commits: dict[str, str | bytes | None]) -> list[str]:
    """Create a git repo at ``root`` with one commit per dict; return the commit ids.

    Each dict maps a path to its new content (str or bytes) or to None to delete it.
    A value ``("symlink", target)`` creates a symlink.
    """
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    shas = []
    for n, files in enumerate(commits):
        for path, content in files.items():
            p = root / path
            if content is None:
                git(root, "rm", "-q", path)
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, tuple) and content[0] == "symlink":
                if p.is_symlink() or p.exists():
                    p.unlink()
                os.symlink(content[1], p)
            elif isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)
            git(root, "add", path)
        git(root, "commit", "-q", "--allow-empty", "-m", f"commit {n}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas


def gold_stub(root: Path, gold, *instance_ids: str) -> Path:
    """A plain directory holding an empty file at every gold path of the instances, for
    tests that need no file's text: a repository holding none of an instance's gold
    files is the wrong one, and its runs are not scored (``gold_not_in_repo``)."""
    root.mkdir(parents=True, exist_ok=True)
    for iid in instance_ids:
        for span in gold.get(iid).gold_context:
            (root / span.file).parent.mkdir(parents=True, exist_ok=True)
            (root / span.file).touch()
    return root


#: the test module's functions, in order; function k (from 0) starts at line 3 + 7 k
FUNC_NAMES = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]


def module_lines() -> list[str]:
    """A two-line header, then eight functions of seven lines (alpha at 3, beta 10, gamma
    17, delta 24, eps 31, zeta 38, eta 45, theta 52; 58 lines): distinctive ``def`` and
    ``value = x * N`` lines between repeated ones (``if value:``, ``return None``, blank
    lines), the shape that tells an alignment right from merely plausible."""
    out = ['"""A module."""', "import os"]
    for i, name in enumerate(FUNC_NAMES):
        out += [f"def {name}(x):", f"    value = x * {i + 2}", "    if value:",
                "        return value", "    return None", "", ""]
    return out
