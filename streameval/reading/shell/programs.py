"""Every shell program streameval knows, stated once: its category and how it is read.

One table (``PROGRAMS``) serves the interpreter (``run``: which handler reads a stage),
the categories (``command_category``, docs/metrics.md §7) and the scan of text the
shell parser rejected (``scan``), so that a program that shows lines is never counted as
doing nothing. The handler modules (``readers``, ``search``, ``writers``, ``git``) each
declare their own programs with their category; programs without a handler (``pytest``,
``make``, ``pip``...) are declared here. A few programs are categorized by their
arguments as well (``shell.rules``): ``sed -i`` edits, ``npm test`` tests.

A program with the category ``other`` is one that adds nothing to what a command is:
``cd``, ``echo``, ``sleep``, ``mkdir``... (``OTHER`` lists them, and a test keeps it
explicit). An unknown program is ``other`` too, unless it is a script of the agent's
(``./x``, ``y.py``), which runs.
"""

from __future__ import annotations

import posixpath
import re

from streameval.reading.shell import git, readers, rules, search, writers
from streameval.reading.shell.context import EMPTY, MAX_DEPTH, Ctx, Program, Rule, Stream
from streameval.reading.shell.syntax import Simple, Word
from streameval.tools import SHELL_PROGRAMS, script_at

__all__ = ["PROGRAMS", "OTHER", "program", "command_category"]


def _shell(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    """``bash -lc 'STRING'``: the string is interpreted as a command of its own."""
    at = script_at([w.text for w in argv])
    if at is None or ctx.run_source is None:
        return EMPTY
    script = argv[at]
    if not script.static:
        ctx.note("bash -c with a dynamic string")
        return EMPTY
    if ctx.depth >= MAX_DEPTH:
        ctx.note("bash -c nested too deep")
        return EMPTY
    ctx.run_source(ctx.sub(ctx.depth + 1), script.text)
    return EMPTY


def _each(category: str, names: str, *, rule: Rule | None = None, silent: bool = False,
          lines: int | None = None) -> dict[str, Program]:
    """One entry for each of the blank-separated ``names``, all alike."""
    return dict.fromkeys(names.split(), Program(category, rule=rule, silent=silent, lines=lines))


#: programs without a handler: what running them says about the agent's work
_UNREAD: tuple[dict[str, Program], ...] = (
    _each("test", "pytest py.test tox nox jest vitest mocha ava karma rspec phpunit ctest "
                  "nosetests trial bats playwright cypress"),
    _each("env", "pip pip3 conda mamba micromamba apt apt-get apt-cache brew pipx virtualenv "
                 "pyenv nvm rustup gem bundle composer which conda-env dpkg yum dnf apk "
                 "easy_install setup-python nix-shell"),
    _each("env", "export source . declare unset", silent=True),
    _each("env", "uv poetry pipenv hatch pdm rye", rule=rules.runner),
    _each("build", "make", rule=rules.make),
    _each("build", "cmake ninja gcc g++ cc c++ clang clang++ javac tsc webpack vite rollup "
                   "esbuild meson scons ant msbuild ponyc rustc swiftc kotlinc scalac ghc zig "
                   "nvcc ld autoreconf configure"),
    _each("build", "mvn mvnw gradle gradlew bazel", rule=rules.subcommand),
    _each("run", "cargo go dotnet swift mix stack cabal sbt", rule=rules.subcommand),
    _each("quality", "ruff flake8 pylint mypy black isort eslint prettier gofmt goimports "
                     "golangci-lint pyright shellcheck rubocop clang-format clang-tidy "
                     "stylelint tslint pycodestyle pyflakes autopep8 yapf biome rustfmt ktlint "
                     "checkstyle hadolint pre-commit codespell bandit vulture"),
    _each("run", "node ruby php java deno Rscript julia lua dotnet-script ts-node tsx "
                 "scala kotlin elixir erl ipython curl wget psql sqlite3 mysql docker kubectl "
                 "jq"),
    _each("env", "npm yarn pnpm bun", rule=rules.js),
    _each("run", "npx pnpx bunx", rule=rules.js),
    _each("read", "view xxd hexdump od strings file stat diff cmp"),
    _each("search", "locate du realpath readlink dirname basename"),
    _each("search", "pwd", lines=1),
    _each("edit", "ed ex dos2unix"),
    _each("git", "gh hub svn hg glab"),
    # they add nothing to what a command is (see the module docstring)
    _each("other", "cd mkdir touch rm rmdir ln chmod chown set true false : sleep test "
                   "[ [[ wait exit return shift local alias trap umask ulimit shopt read",
          silent=True),
    _each("other", "date whoami hostname nproc arch", lines=1),
)


def _table(*parts: dict[str, Program]) -> dict[str, Program]:
    table: dict[str, Program] = {}
    for part in parts:
        twice = table.keys() & part.keys()
        assert not twice, f"programs stated twice: {sorted(twice)}"
        table.update(part)
    return table


#: program name -> what streameval knows of it
PROGRAMS: dict[str, Program] = _table(
    readers.PROGRAMS, search.PROGRAMS, writers.PROGRAMS, git.PROGRAMS,
    dict.fromkeys(SHELL_PROGRAMS, Program("run", _shell, rules.shell)), *_UNREAD)
#: the programs whose category is ``other``: they add nothing to what a command is
OTHER = frozenset(name for name, p in PROGRAMS.items() if p.category == "other")
#: the names of one program, ``python`` (``python3.11``, ``pypy3``, ``python2.7``)
_PYTHON = re.compile(r"python[\d.]*|pypy3?")


def program(name: str) -> Program | None:
    """The table's entry for a program's name (its basename), None when unknown."""
    found = PROGRAMS.get(name)
    if found is None and _PYTHON.fullmatch(name):
        return writers.PYTHON
    return found


def command_category(argv: list[str]) -> str:
    """Category of one simple command, from its program and arguments."""
    if not argv:
        return "other"
    prog = argv[0]
    if rules.SCRIPT_TEST.search(prog):
        return "test"
    name = posixpath.basename(prog)
    entry = program(name)
    if entry is not None and entry.rule is not None:
        return entry.rule(name, argv[1:], command_category)
    if entry is not None and entry.category != "other":
        return entry.category
    # unknown, or adding nothing: unless the agent runs a file of its own (``./test``)
    script = name.endswith((".py", ".sh", ".js", ".rb", ".pl")) or prog.startswith(("./", "/"))
    return "run" if script else "other"
