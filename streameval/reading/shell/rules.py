"""A program's category from its arguments, where its name alone does not say it.

``sed -i`` edits where ``sed -n`` reads; ``git grep`` searches; ``npm test`` tests and
``npm install`` sets up; ``make lint`` checks style. Each rule is attached to its programs
in the one table (``shell.programs``), and gets the program's name, its arguments, and a
way to categorize another command line: ``npx eslint .`` is what ``eslint .`` is,
``uv run pytest`` what ``pytest`` is, ``python -m mypy`` what ``mypy`` is.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from streameval.tools import script_at

__all__ = ["SCRIPT_TEST", "in_place", "perl", "python", "js", "make", "subcommand", "runner",
           "git", "shell"]

Categorize = Callable[[list[str]], str]

#: a test runner script of the repository's own (Django's ``tests/runtests.py``)
SCRIPT_TEST = re.compile(r"(^|/)(runtests|run_tests|run-tests)(\.py|\.sh)?$")


def in_place(name: str, args: list[str], categorize: Categorize) -> str:
    """``sed``: ``-i`` edits its files, anything else prints them."""
    return "edit" if any(a.startswith(("-i", "--in-place")) for a in args) else "read"


def perl(name: str, args: list[str], categorize: Categorize) -> str:
    """A one-liner over files: ``-i`` edits them, ``-n``/``-p`` prints them; else a script."""
    if any(re.fullmatch(r"-[a-zA-Z]*[np][a-zA-Z]*", a) for a in args):
        return "edit" if any(re.fullmatch(r"-[a-zA-Z]*i\S*", a) for a in args) else "read"
    return "run"


#: ``python -m M`` for modules that are no program of their own
_PYTHON_MODULES = {
    "unittest": "test", "nose": "test", "doctest": "test",
    "venv": "env", "ensurepip": "env",
    "build": "build", "compileall": "build", "py_compile": "build", "setuptools": "build",
}
#: what ``python -m M`` can be besides running code, when M is also a program
_MODULE_CATEGORIES = ("test", "env", "quality", "build")


def python(name: str, args: list[str], categorize: Categorize) -> str:
    """``python -m pytest`` is what ``pytest`` is; ``python setup.py build`` builds; a
    test runner script tests; anything else runs code."""
    if not args:
        return "run"
    if args[0] == "-m" and len(args) > 1:
        mod = args[1]
        if mod.startswith("pytest"):
            return "test"
        if mod in _PYTHON_MODULES:
            return _PYTHON_MODULES[mod]
        as_program = categorize([mod])
        return as_program if as_program in _MODULE_CATEGORIES else "run"
    script = next((a for a in args if not a.startswith("-")), "")
    if SCRIPT_TEST.search(script):
        return "test"
    if posixpath.basename(script) == "setup.py":
        return "build" if any(a in ("build", "build_ext", "sdist", "bdist_wheel")
                              for a in args) else "env"
    return "run"


# --------------------------------------------------------------------------- JavaScript

_JS_TEST = ("test", "test:unit", "test:e2e", "jest", "vitest", "mocha", "playwright", "e2e")
_JS_ENV = ("install", "i", "ci", "add", "remove", "uninstall", "update", "upgrade", "link",
           "dlx", "create", "init")
_JS_VALUED = ("--filter", "-F", "--prefix", "-C", "--dir", "-w", "--workspace")
#: runners of a package's binary: ``npx eslint .`` is ``eslint .``
_JS_RUNNERS = ("npx", "pnpx", "bunx")


def js(name: str, args: list[str], categorize: Categorize) -> str:
    """npm, yarn, pnpm, bun and their runners: by the script or binary they run."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in _JS_VALUED else rest[1:]
    if not rest:
        return "run" if name in _JS_RUNNERS else "env"
    sub = rest[0]
    if name in _JS_RUNNERS or (name in ("pnpm", "yarn", "bun") and sub == "exec"):
        tool = rest[1] if sub == "exec" and len(rest) > 1 else sub
        tool = tool.split("@")[0] if not tool.startswith("@") else tool
        if tool.startswith("create-"):
            return "env"
        return categorize([tool] + rest[1:])
    if sub == "run" and len(rest) > 1:
        sub = rest[1]
    return _script_name(sub)


def _script_name(sub: str) -> str:
    base = sub.split(":")[0]
    if sub in _JS_TEST or base == "test":
        return "test"
    if sub in _JS_ENV:
        return "env"
    if base in ("build", "compile", "check-types", "typecheck", "tsc") or sub == "type-check":
        return "build"
    if base in ("lint", "format", "fmt", "prettier", "eslint"):
        return "quality"
    return "run"


# --------------------------------------------------------------------------- build tools


def make(name: str, args: list[str], categorize: Categorize) -> str:
    """``make test`` tests, ``make lint`` checks style, any other target builds."""
    targets = [a for a in args if not a.startswith("-") and "=" not in a]
    if any(t in ("test", "tests", "check", "test-all", "unittest") for t in targets):
        return "test"
    if any(t in ("lint", "format", "fmt", "style") for t in targets):
        return "quality"
    return "build"


_SUB = {
    "test": "test", "build": "build", "compile": "build", "check": "build", "install": "build",
    "package": "build", "assemble": "build", "run": "run", "clippy": "quality",
    "fmt": "quality", "vet": "quality", "lint": "quality", "add": "env", "get": "env",
    "mod": "env", "fetch": "env", "update": "env", "restore": "env", "verify": "test",
    "bench": "test", "ktlintCheck": "quality",
}
#: build tools whose unknown subcommands (and no subcommand) build; others' run
_BUILDERS = ("mvn", "mvnw", "./mvnw", "gradle", "gradlew", "./gradlew", "bazel")


def subcommand(name: str, args: list[str], categorize: Categorize) -> str:
    """cargo, go, mvn, gradle, dotnet...: by the subcommand (``cargo clippy``)."""
    sub = next((a for a in args if not a.startswith("-")), "")
    if name in ("go", "cargo") and sub == "install":
        return "env"
    return _SUB.get(sub, "build" if name in _BUILDERS else "run")


def runner(name: str, args: list[str], categorize: Categorize) -> str:
    """``uv run pytest``, ``poetry run mypy``: what they run; else environment work."""
    sub = next((a for a in args if not a.startswith("-")), "")
    if sub != "run":
        return "env"
    rest = args[args.index("run") + 1:]
    return categorize(rest) if rest else "run"


def git(name: str, args: list[str], categorize: Categorize) -> str:
    """``git apply`` edits, ``git grep``/``ls-files`` search, ``git show REV:f`` reads; the
    rest is version control."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    sub = args[i] if i < len(args) else ""
    if sub == "apply":
        return "edit"
    if sub in ("grep", "ls-files"):
        return "search"
    if sub == "show" and any(":" in a and not a.startswith("-") for a in args[i + 1:]):
        return "read"
    return "git"


def shell(name: str, args: list[str], categorize: Categorize) -> str:
    """``bash -lc 'X'`` only wraps X, which is categorized on its own; ``bash x.sh`` runs
    a script."""
    return "other" if script_at([name, *args]) is not None else "run"
