"""Tool-call categories by rules, no model (docs/metrics.md §7).

Every tool call gets exactly one of ``model.CATEGORIES``. Native tools are named by
their tool; shell commands by the programs they run (``shell.analyze`` calls
``command_category`` once per simple command and keeps the most significant, and the
reader hands that category to ``categorize``: this module never parses a command).

Significance, most first: edit > test > build > quality > env > git > run > read >
search > other. Why this order: a command that changes the repo is an edit whatever
else it does (``sed -i ... && pytest`` is where the agent acted); running tests is the
next strongest signal of intent and cost, then building, then linting/formatting
(quality), then dependency/environment work (``env`` = "env/deps"), then version
control. ``run`` (a script of the agent's own) outranks plain reading, and reading a
file outranks searching for one; ``cd``/``echo``/``sleep`` add nothing (other).

A command the shell parser rejects still gets a category from all the programs a plain
scan of its text finds (``shell.scan``: command positions after ``&&``,
``;``, ``|``, newlines or a literal ``\\n``, inside ``bash -lc '...'``, heredoc bodies
skipped), with the same significance order; ``cat >f`` there writes f (edit for a repo
file, other for a scratch file), it reads nothing. ``git checkout -- f`` and ``git
restore f`` stay ``git``: they undo edits, the agent makes none.
"""

from __future__ import annotations

import posixpath
import re

from streameval.model import CATEGORIES, ToolCall
from streameval.tools import SHELL_PROGRAMS, is_script_flag, kind_of

__all__ = ["categorize", "command_category", "most_significant", "is_context_file"]

#: most significant first (see the module docstring for why)
SIGNIFICANCE: tuple[str, ...] = (
    "edit", "test", "build", "quality", "env", "git", "run", "read", "search", "other",
)
_RANK = {c: i for i, c in enumerate(SIGNIFICANCE)}
assert set(SIGNIFICANCE) == set(CATEGORIES)


def most_significant(cats: list[str]) -> str:
    """The category of a compound command: the most significant of its parts."""
    return min(cats, key=lambda c: _RANK.get(c, len(_RANK)), default="other")


# --------------------------------------------------------------------------- native tools

_NATIVE: dict[str, str] = {}
for _cat, _names in {
    "read": ("Read", "NotebookRead", "view", "read", "read_file", "ReadFile", "open", "goto",
             "scroll_up", "scroll_down", "view_file", "cat_file"),
    "search": ("Grep", "Glob", "LS", "find_file", "search_dir", "search_file", "grep", "glob",
               "list_dir", "list_directory", "list_files", "search_files", "codebase_search",
               "file_search", "ls", "find"),
    "edit": ("Edit", "MultiEdit", "Write", "NotebookEdit", "str_replace", "create", "insert",
             "file_change", "apply_patch", "edit", "write_file", "write", "replace",
             "edit_file", "undo_edit"),
    "other": ("TodoWrite", "Task", "Agent", "update_plan", "think", "WebFetch", "WebSearch",
              "web_search", "ExitPlanMode", "BashOutput", "KillBash", "KillShell", "finish",
              "submit", "recall", "message", "browse", "todo_list"),
    "run": ("run_ipython", "ipython"),
}.items():
    for _n in _names:
        _NATIVE[_n] = _cat

def categorize(call: ToolCall, shell_category: str | None = None) -> str:
    """Category of one tool call (one of ``model.CATEGORIES``).

    A shell call's category is that of its command (``shell_category``, from the shell
    analysis the reader already made); without one it is ``other``.
    """
    tool = call.tool or ""
    inp = call.input if isinstance(call.input, dict) else {}
    kind = kind_of(tool, inp)
    if kind == "editor":
        viewing = inp.get("command") == "view" or (tool.lower() == "read" and not inp.get("command"))
        return "read" if viewing else "edit"
    if kind == "shell" or shell_category is not None:
        return shell_category if shell_category in CATEGORIES else "other"
    if tool in _NATIVE:
        return _NATIVE[tool]
    low = tool.lower()
    if low.startswith("mcp__"):
        return "other"
    return _NATIVE.get(low, "other")


# --------------------------------------------------------------------------- shell programs

_TEST = {"pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "karma",
         "rspec", "phpunit", "ctest", "runtests.py", "run_tests.py", "runtests", "nosetests",
         "trial", "bats", "playwright", "cypress"}
_ENV = {"pip", "pip3", "uv", "poetry", "conda", "mamba", "micromamba", "apt", "apt-get",
        "apt-cache", "brew", "pipenv", "pipx", "virtualenv", "pyenv", "nvm", "rustup", "gem",
        "bundle", "composer", "export", "source", ".", "which", "conda-env", "dpkg", "yum",
        "dnf", "apk", "easy_install", "setup-python", "declare", "unset", "nix-shell"}
_BUILD = {"make", "cmake", "ninja", "gcc", "g++", "cc", "c++", "clang", "clang++", "javac",
          "tsc", "webpack", "vite", "rollup", "esbuild", "bazel", "meson", "scons", "ant",
          "msbuild", "dotnet", "ponyc", "rustc", "swiftc", "kotlinc", "scalac", "ghc", "zig",
          "nvcc", "ld", "autoreconf", "configure", "./configure"}
_QUALITY = {"ruff", "flake8", "pylint", "mypy", "black", "isort", "eslint", "prettier",
            "gofmt", "goimports", "golangci-lint", "pyright", "shellcheck", "rubocop",
            "clang-format", "clang-tidy", "stylelint", "tslint", "pycodestyle", "pyflakes",
            "autopep8", "yapf", "biome", "rustfmt", "ktlint", "checkstyle", "hadolint",
            "pre-commit", "codespell", "bandit", "vulture"}
_RUN = {"python", "python2", "python3", "node", "ruby", "perl", "php", "java", "deno", "bun",
        "Rscript", "julia", "lua", "dotnet-script", "ts-node", "tsx", "bash", "sh", "zsh",
        "swift", "scala", "kotlin", "elixir", "erl", "go", "cargo", "ipython", "curl", "wget",
        "psql", "sqlite3", "mysql", "docker", "kubectl", "jq"}
_READ = {"cat", "nl", "head", "tail", "less", "more", "bat", "batcat", "tac", "awk", "gawk",
         "wc", "view", "xxd", "hexdump", "od", "strings", "file", "stat", "diff", "cmp"}
_SEARCH = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "ls", "tree", "fd", "fdfind",
           "locate", "du", "realpath", "readlink", "pwd", "dirname", "basename"}
_EDIT = {"apply_patch", "applypatch", "patch", "tee", "ed", "ex", "dos2unix"}
_GIT = {"git", "gh", "hub", "svn", "hg", "glab"}
_JS_PM = {"npm", "yarn", "pnpm", "bun", "npx", "pnpx", "bunx"}
_SCRIPT_TEST = re.compile(r"(^|/)(runtests|run_tests|run-tests)(\.py|\.sh)?$")


def command_category(argv: list[str]) -> str:
    """Category of one simple command, from its program and first arguments."""
    if not argv:
        return "other"
    prog = argv[0]
    name = posixpath.basename(prog)
    args = argv[1:]
    if _SCRIPT_TEST.search(prog):
        return "test"
    if name in SHELL_PROGRAMS and any(is_script_flag(a) for a in args):
        return "other"   # the inner command string is categorized on its own
    if name == "sed":
        return "edit" if any(a.startswith(("-i", "--in-place")) for a in args) else "read"
    if name == "perl" and any(re.fullmatch(r"-[a-zA-Z]*[np][a-zA-Z]*", a) for a in args):
        # a one-liner over files: -i edits them, -n/-p prints them
        return "edit" if any(re.fullmatch(r"-[a-zA-Z]*i\S*", a) for a in args) else "read"
    if name in ("python", "python2", "python3", "pypy3") or re.fullmatch(r"python3\.\d+", name):
        return _python(args)
    if name in _JS_PM:
        return _js(name, args)
    for table, cat in ((_EDIT, "edit"), (_TEST, "test"), (_QUALITY, "quality"),
                       (_GIT, "git"), (_SEARCH, "search"), (_READ, "read")):
        if name in table:
            return _git(args) if cat == "git" and name == "git" else cat
    return _by_tool(name, args, prog)


def _by_tool(name: str, args: list[str], prog: str = "") -> str:
    sub = next((a for a in args if not a.startswith("-")), "")
    if name == "make":
        return _make(args)
    if name in ("cargo", "go", "mvn", "mvnw", "./mvnw", "gradle", "gradlew", "./gradlew",
                "dotnet", "swift", "mix", "stack", "cabal", "sbt", "bazel"):
        return _subcommand(name, sub)
    if name in ("uv", "poetry", "pipenv", "hatch", "pdm", "rye") and sub == "run":
        rest = args[args.index("run") + 1:]
        return command_category(rest) if rest else "run"
    for table, cat in ((_ENV, "env"), (_BUILD, "build"), (_RUN, "run")):
        if name in table:
            return cat
    if name.endswith((".py", ".sh", ".js", ".rb", ".pl")) or prog.startswith(("./", "/")):
        return "run"
    return "other"


def _python(args: list[str]) -> str:
    if not args:
        return "run"
    if args[0] == "-m" and len(args) > 1:
        mod = args[1]
        if mod in ("pytest", "unittest", "nose", "tox", "nox", "doctest") or mod.startswith(
                "pytest"):
            return "test"
        if mod in ("pip", "venv", "virtualenv", "ensurepip", "pipx", "uv"):
            return "env"
        if mod in ("mypy", "ruff", "black", "isort", "flake8", "pylint", "pyright"):
            return "quality"
        if mod in ("build", "compileall", "py_compile", "setuptools"):
            return "build"
        return "run"
    script = next((a for a in args if not a.startswith("-")), "")
    if _SCRIPT_TEST.search(script) or posixpath.basename(script) in ("runtests.py",):
        return "test"
    if posixpath.basename(script) == "setup.py":
        return "build" if any(a in ("build", "build_ext", "sdist", "bdist_wheel")
                              for a in args) else "env"
    return "run"


_JS_TEST = ("test", "test:unit", "test:e2e", "jest", "vitest", "mocha", "playwright", "e2e")
_JS_ENV = ("install", "i", "ci", "add", "remove", "uninstall", "update", "upgrade", "link",
           "dlx", "create", "init")


def _js(name: str, args: list[str]) -> str:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("--filter", "-F", "--prefix", "-C", "--dir", "-w",
                                       "--workspace") else rest[1:]
    if not rest:
        return "env" if name in ("npm", "yarn", "pnpm", "bun") else "run"
    sub = rest[0]
    if name in ("npx", "pnpx", "bunx") or (name in ("pnpm", "yarn", "bun") and sub == "exec"):
        tool = rest[1] if sub == "exec" and len(rest) > 1 else sub
        tool = tool.split("@")[0] if not tool.startswith("@") else tool
        if tool.startswith("create-"):
            return "env"
        return command_category([tool] + rest[1:])
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
    if sub in ("start", "dev", "serve", "preview", "exec", "x"):
        return "run"
    return "run"


def _make(args: list[str]) -> str:
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


def _subcommand(name: str, sub: str) -> str:
    if name in ("go",) and sub == "install":
        return "env"
    if name == "cargo" and sub == "install":
        return "env"
    return _SUB.get(sub, "build" if name in ("mvn", "mvnw", "./mvnw", "gradle", "gradlew",
                                             "./gradlew", "bazel") else "run")


def _git(args: list[str]) -> str:
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


# --------------------------------------------------------------------------- context files

_CONTEXT_NAMES = {"AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules",
                  ".windsurfrules", ".clinerules", "CONVENTIONS.md", "AGENT.md"}


def is_context_file(path: str) -> bool:
    """True for agent instruction files (AGENTS.md, CLAUDE.md, .cursor/rules/*, ...).

    File names are matched case-sensitively, as the agents themselves look them up.
    """
    p = path.strip().strip("'\"").replace("\\", "/")
    if not p:
        return False
    base = posixpath.basename(p.rstrip("/"))
    if base in _CONTEXT_NAMES:
        return True
    parts = p.split("/")
    if ".cursor" in parts:   # a file under .cursor/rules/
        i = parts.index(".cursor")
        if len(parts) > i + 2 and parts[i + 1] == "rules":
            return True
    if ".clinerules" in parts[:-1]:
        return True
    return p.endswith(".github/copilot-instructions.md")
