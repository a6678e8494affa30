"""Tool-call categories by rules (docs/metrics.md §7)."""

from __future__ import annotations

import shlex

import pytest

from streameval.model import CATEGORIES, ToolCall
from streameval.reading.categories import (
    SIGNIFICANCE,
    categorize,
    is_context_file,
    most_significant,
)
from streameval.reading.infer import infer
from streameval.reading.shell import analyze
from streameval.reading.shell.programs import command_category


def call(tool: str, **inp: object) -> ToolCall:
    return ToolCall(call_id="c1", tool=tool, input=dict(inp))


NATIVE = [
    ("Read", {"file_path": "a.py"}, "read"),
    ("NotebookRead", {}, "read"),
    ("view", {}, "read"),
    ("Grep", {"pattern": "x"}, "search"),
    ("Glob", {"pattern": "*.py"}, "search"),
    ("LS", {}, "search"),
    ("find_file", {}, "search"),
    ("search_dir", {}, "search"),
    ("search_file", {}, "search"),
    ("Edit", {}, "edit"),
    ("MultiEdit", {}, "edit"),
    ("Write", {}, "edit"),
    ("NotebookEdit", {}, "edit"),
    ("str_replace", {}, "edit"),
    ("create", {}, "edit"),
    ("insert", {}, "edit"),
    ("file_change", {}, "edit"),
    ("apply_patch", {}, "edit"),
    ("TodoWrite", {}, "other"),
    ("Task", {}, "other"),
    ("update_plan", {}, "other"),
    ("think", {}, "other"),
    ("WebFetch", {}, "other"),
    ("WebSearch", {}, "other"),
    ("some_unknown_tool", {}, "other"),
    ("mcp__server__read_file", {}, "other"),
    # SWE-agent str_replace_editor by its command
    ("str_replace_editor", {"command": "view", "path": "/testbed/a.py"}, "read"),
    ("str_replace_editor", {"command": "str_replace", "path": "/testbed/a.py"}, "edit"),
    ("str_replace_editor", {"command": "create", "path": "/testbed/a.py"}, "edit"),
    ("str_replace_editor", {"command": "insert", "path": "/testbed/a.py"}, "edit"),
    ("str_replace_editor", {"command": "undo_edit", "path": "/testbed/a.py"}, "edit"),
    # OpenHands actions
    ("read", {"path": "/workspace/a.c"}, "read"),
    ("edit", {"command": "str_replace", "path": "/workspace/a.c"}, "edit"),
    ("edit", {"command": "view", "path": "/workspace/a.c"}, "read"),
    ("run", {"command": "make"}, "build"),
    ("run_ipython", {"code": "print(1)"}, "run"),
    ("finish", {}, "other"),
    ("recall", {}, "other"),
]


@pytest.mark.parametrize("tool,inp,expected", NATIVE, ids=[f"{t}-{e}" for t, _, e in NATIVE])
def test_native_tools(tool: str, inp: dict, expected: str) -> None:
    assert infer(call(tool, **inp)).category == expected


SHELL = [
    # test
    ("pytest -q tests/test_a.py", "test"),
    ("python -m pytest -x", "test"),
    ("python3 -m pytest tests", "test"),
    ("tox -e py311", "test"),
    ("nox -s tests", "test"),
    ("go test ./...", "test"),
    ("cargo test", "test"),
    ("npm test 2>&1 | tail -20", "test"),
    ("yarn test", "test"),
    ("pnpm --filter @repo/spectora-labs test", "test"),
    ("jest src", "test"),
    ("mvn test", "test"),
    ("./runtests.py", "test"),
    ("./tests/runtests.py migrations", "test"),
    ("python3 tests/runtests.py aggregation", "test"),
    ("cd apps/app && pnpm test NavUser.test.tsx", "test"),
    ("make test", "test"),
    ("uv run pytest", "test"),
    ("timeout 600 python -m pytest -q", "test"),
    # git
    ("git status", "git"),
    ("git diff --stat", "git"),
    ("git log --oneline -5", "git"),
    ("git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"", "git"),
    ("gh pr view 88 2>&1", "git"),
    # env / deps
    ("pip install -e .", "env"),
    ("pip3 install numpy", "env"),
    ("uv pip install x", "env"),
    ("poetry install", "env"),
    ("conda install numpy", "env"),
    ("apt-get update && apt-get install -y llvm-dev", "env"),
    ("npm install 2>&1 | tail -20", "env"),
    ("yarn add lodash", "env"),
    ("pnpm add lucide-react", "env"),
    ("cargo add serde", "env"),
    ("go get example.com/x", "env"),
    ("python -m pip install x", "env"),
    ("npx create-next-app@latest todo-app --typescript", "env"),
    ("export LLVM_DIR=/usr/lib/llvm-14/cmake", "env"),
    # build
    ("make", "build"),
    ("make clean && make", "build"),
    ("cmake -B . -S /workspace/ponyc", "build"),
    ("cargo build --release", "build"),
    ("go build ./...", "build"),
    ("tsc --noEmit", "build"),
    ("npx tsc --noEmit --skipLibCheck", "build"),
    ("npm run build", "build"),
    ("gcc -o a a.c", "build"),
    ("javac A.java", "build"),
    ("mvn compile", "build"),
    ("pnpm --filter @repo/spectora-labs check-types", "build"),
    # quality
    ("ruff check .", "quality"),
    ("flake8 src", "quality"),
    ("pylint pkg", "quality"),
    ("mypy src", "quality"),
    ("black --check .", "quality"),
    ("isort .", "quality"),
    ("eslint .", "quality"),
    ("npx eslint . 2>&1", "quality"),
    ("prettier --check .", "quality"),
    ("cargo clippy", "quality"),
    ("gofmt -l .", "quality"),
    ("npm run lint 2>&1 | head -100", "quality"),
    # run
    ("python reproduce_issue.py", "run"),
    ("python -c 'print(1)'", "run"),
    ("node index.js", "run"),
    ("ruby x.rb", "run"),
    ("go run main.go", "run"),
    ("cargo run", "run"),
    ("java -jar app.jar", "run"),
    ("python - <<'PY'\nprint(open('a.py').read())\nPY", "run"),
    # read
    ("cat a.py", "read"),
    ("sed -n '1,20p' a.py", "read"),
    ("head -n 5 a.py", "read"),
    ("tail -n 5 a.py", "read"),
    ("nl -ba a.py", "read"),
    ("less a.py", "read"),
    ("nl -ba a.py | sed -n '1,5p'", "read"),
    ("git show HEAD:a.py", "read"),
    # search
    ("grep -rn foo src", "search"),
    ("rg foo", "search"),
    ("find . -name '*.py'", "search"),
    ("ls -la", "search"),
    ("tree src", "search"),
    ("fd py", "search"),
    ("grep -rn foo src | head -50", "search"),
    ("find . -name '*.py' | xargs grep -n foo", "search"),
    ("git grep -n foo", "search"),
    # edit
    ("sed -i 's/a/b/' a.py", "edit"),
    ("echo x | tee a.py", "edit"),
    ("cat > a.py <<'EOF'\nx\nEOF", "edit"),
    ("echo x > a.py", "edit"),
    ("apply_patch <<'P'\n*** Begin Patch\n*** Delete File: a.py\n*** End Patch\nP", "edit"),
    ("patch -p1 < fix.diff", "edit"),
    ("git apply <<'EOF'\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nEOF", "edit"),
    # compound: the most significant part wins
    ("sed -i 's/a/b/' a.py && pytest -q", "edit"),
    ("cat a.py && pytest", "test"),
    ("git diff && make", "build"),
    ("grep -rn foo . ; cat a.py", "read"),
    ("pip install x && ruff check .", "quality"),
    ("git status && python x.py", "git"),
    ("bash -lc \"sed -n '1,200p' README.md | tee logs/02_readme_head.log\"", "read"),
    ("npm test 2>&1 | tee test-output.log", "test"),
    # other
    ("cd /repo", "other"),
    ("echo hello", "other"),
    ("sleep 30", "other"),
    ("mkdir -p build", "other"),
    ("", "other"),
]


@pytest.mark.parametrize("cmd,expected", SHELL, ids=[c[:40] for c, _ in SHELL])
def test_shell_commands(cmd: str, expected: str) -> None:
    assert infer(call("Bash", command=cmd)).category == expected
    assert analyze(cmd).category == expected


def test_shell_tools_and_precomputed_analysis() -> None:
    assert infer(call("shell", command=["bash", "-lc", "pytest -q"])).category == "test"
    assert infer(call("command_execution", command="bash -lc 'cat a.py'")).category == "read"
    assert infer(call("exec_command", cmd="git status")).category == "git"
    # a precomputed analysis is used as it is
    assert categorize(call("Bash", command="ls"), analyze("make").category) == "build"
    assert infer(call("Bash")).category == "other"


def test_output_is_used_when_categorizing() -> None:
    tc = ToolCall(call_id="x", tool="Bash", input={"command": "cat a.py"},
                  output="cat: a.py: No such file or directory")
    assert infer(tc).category == "read"


@pytest.mark.parametrize("argv,expected", [
    (["python", "-m", "mypy", "src"], "quality"),
    (["python", "setup.py", "build_ext"], "build"),
    (["python", "-m", "venv", ".venv"], "env"),
    (["cargo", "fmt"], "quality"),
    (["go", "vet", "./..."], "quality"),
    (["make", "lint"], "quality"),
    (["./build/bin/ponyc", "test.pony"], "build"),
    (["./test"], "run"),
    (["bash", "-lc", "ls"], "other"),
    (["bash", "script.sh"], "run"),
    ([], "other"),
])
def test_command_category(argv: list[str], expected: str) -> None:
    assert command_category(argv) == expected


def test_significance_order_is_the_documented_one() -> None:
    assert SIGNIFICANCE == ("edit", "test", "build", "quality", "env", "git", "run", "read",
                            "search", "other")
    assert set(SIGNIFICANCE) == set(CATEGORIES)
    for i, hi in enumerate(SIGNIFICANCE):
        for lo in SIGNIFICANCE[i + 1:]:
            assert most_significant([lo, hi]) == hi
    assert most_significant([]) == "other"


def test_every_category_is_reachable() -> None:
    got = {analyze(c).category for c, _ in SHELL}
    assert got == set(CATEGORIES)


CONTEXT = [
    ("AGENTS.md", True),
    ("sub/dir/AGENTS.md", True),
    ("/repo/CLAUDE.md", True),
    ("CLAUDE.local.md", True),
    ("GEMINI.md", True),
    (".cursorrules", True),
    (".cursor/rules/python.mdc", True),
    ("/repo/.cursor/rules/sub/x.md", True),
    (".windsurfrules", True),
    (".clinerules", True),
    (".clinerules/01-style.md", True),
    (".github/copilot-instructions.md", True),
    ("CONVENTIONS.md", True),
    ("AGENT.md", True),
    ("'AGENTS.md'", True),
    ("agents.md", False),
    ("claude.md", False),
    ("README.md", False),
    ("docs/AGENTS.md.bak", False),
    (".cursor/settings.json", False),
    ("copilot-instructions.md", False),
    ("", False),
]


@pytest.mark.parametrize("path,expected", CONTEXT, ids=[p or "empty" for p, _ in CONTEXT])
def test_is_context_file(path: str, expected: bool) -> None:
    assert is_context_file(path) is expected


def test_shell_join_roundtrip() -> None:
    # Codex gives argv lists; joining and re-parsing keeps the category
    argv = ["bash", "-lc", "sed -n '1,200p' 'apps/x (y)/a.ts'"]
    assert infer(call("shell", command=argv)).category == "read"
    assert analyze(shlex.join(argv)).reads[0].path == "apps/x (y)/a.ts"


def test_unparsable_cat_heredoc_then_python_is_run() -> None:
    """real: ContextBench SWE-agent xarray-4075 call 11, rejected by the shell (its
    newlines are a literal backslash-n): categorized from every program found, not
    `read` from its first word; `cat >/tmp/repro.py` writes a scratch file."""
    cmd = ("bash -lc 'cat >/tmp/repro.py <<PY\\nimport numpy as np\\nimport xarray as xr\\n"
           "dta = xr.DataArray([1., 1., 1.])\\nres = dta.weighted(wgt).mean()\\n"
           "print(\\\"Weighted mean with bool weights (before fix):\\\", res.values)\\n"
           "PY\\nPYTHONPATH=/testbed python /tmp/repro.py'\n")
    out = ("bash: line 1: warning: here-document at line 1 delimited by end-of-file "
           "(wanted `PYnimport')\nbash: -c: line 1: syntax error near unexpected token `('\n")
    tc = ToolCall(call_id="c11", tool="bash", input={"command": cmd}, output=out)
    assert infer(tc).category == "run"
    # the same text with real newlines parses, and is the same run
    assert infer(call("bash", command=cmd.replace("\\n", "\n"))).category == "run"


@pytest.mark.parametrize("cmd,expected", [
    ("cat > /tmp/x.py <<'EOF'\nprint(1)\nEOF", "other"),   # a scratch file: no read, no edit
    ("git checkout -- a.py", "git"),                       # a revert is version control
    ("git restore a.py && pytest -q", "test"),
])
def test_scratch_writes_and_reverts(cmd: str, expected: str) -> None:
    assert infer(call("Bash", command=cmd)).category == expected
