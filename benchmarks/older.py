"""The older version a benchmark compares HEAD with, named the way a reader names it.

``--old`` is a git revision of this repository (``f53415f``, ``main~3``) or a checkout of
one. A revision is written out once with ``git archive`` (no worktree: nothing of the
repository changes) into the temporary directory, and run with this interpreter, its
own source first on the module path: the two versions share the installed packages, so
only streameval differs. ``--old-python`` runs it with another interpreter instead (a
checkout with a virtualenv of its own, for an older version whose dependencies differ).

    from older import add_arguments, head, label, versions
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True)
class Version:
    """One version under test: a name, its checkout, how to run Python in it."""

    name: str
    checkout: Path
    python: str = sys.executable
    #: the environment its processes run in (the checkout first on ``PYTHONPATH``)
    env: dict[str, str] = field(default_factory=dict, compare=False)

    def run(self, args: list[str], **kw) -> subprocess.CompletedProcess:
        """``python ARGS`` in this version (its checkout the working directory)."""
        return subprocess.run([self.python, *args], cwd=self.checkout, env=self.env, **kw)


def add_arguments(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("--old", required=required, metavar="REV|DIR",
                   help="the older version: a git revision of this repository, or a checkout")
    p.add_argument("--old-python", help="its interpreter (default: this one, its source first)")


def _env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # as a user's install runs: with its bytecode cache (a sandbox may set
    # PYTHONDONTWRITEBYTECODE, which makes every start compile every module)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [env.get("PYTHONPATH")])])
    return env


def checkout(old: str) -> Path:
    """A directory holding version ``old``: the directory itself, or the revision
    written out once (by its full commit id) under the temporary directory."""
    if Path(old).is_dir():
        return Path(old).resolve()
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{old}^{{commit}}"],
                         check=True, capture_output=True, text=True).stdout.strip()
    out = Path(tempfile.gettempdir()) / f"streameval-{sha[:12]}"
    if not (out / "streameval" / "__init__.py").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def current() -> Version:
    """This checkout, with this interpreter."""
    return Version("new", REPO, sys.executable, _env(REPO))


def versions(args: argparse.Namespace) -> list[Version]:
    """``new`` (this checkout) and, with ``--old``, ``old``: in the order they first run."""
    out = [current()]
    if args.old:
        where = checkout(args.old)
        out.append(Version("old", where, args.old_python or sys.executable, _env(where)))
    return out


def label(args: argparse.Namespace) -> str:
    """What ``old`` was, for the printed figures: the revision as given, and its commit."""
    if not args.old or Path(args.old).is_dir():
        return args.old or ""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", f"{args.old}^{{commit}}"],
                         capture_output=True, text=True).stdout.strip()
    return f"{args.old} ({sha})" if sha and sha != args.old else args.old


def head() -> str:
    """This checkout's commit, and whether it has changes not committed."""
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *a], capture_output=True,
                              text=True).stdout.strip()
    sha = git("rev-parse", "--short", "HEAD")
    return sha + (" with changes not committed" if git("status", "--porcelain", "--", ".") else "")
