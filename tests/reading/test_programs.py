"""The shell program table (``reading/shell/programs.py``): one entry per program.

The interpreter's handlers, the categories and the scan of rejected text all read the
same table. The drift cases are the programs the old handler registry and the old
category sets disagreed on (issue 15): each is a test below.
"""

from __future__ import annotations

import pytest

from streameval.model import CATEGORIES, Read, ToolCall
from streameval.reading.infer import infer
from streameval.reading.shell import analyze
from streameval.reading.shell.programs import OTHER, PROGRAMS, command_category, program
from streameval.reading.shell.scan import scan_commands, scanned_category
from streameval.tools import SHELL_PROGRAMS

#: programs that truly are ``other``: they add nothing to what a command is. A program
#: added with category ``other`` must be added here on purpose.
TRULY_OTHER = {
    # handled: they reorder what they are given, or print the agent's own text
    "sort", "uniq", "echo",
    # silent: cd, file moves, builtins
    "cd", "mkdir", "touch", "cp", "mv", "rm", "rmdir", "ln", "chmod", "chown", "set", "true",
    "false", ":", "sleep", "test", "[", "[[", "wait", "exit", "return", "shift", "local",
    "alias", "trap", "umask", "ulimit", "shopt", "read",
    # one line about the machine
    "date", "whoami", "hostname", "nproc", "arch",
}


def test_every_program_has_a_category_and_only_the_listed_ones_are_other() -> None:
    assert OTHER == TRULY_OTHER
    for name, entry in PROGRAMS.items():
        assert entry.category in CATEGORIES, name
        if name not in TRULY_OTHER:
            assert entry.category != "other", name


def test_every_handled_program_counts_as_something() -> None:
    handled = {name for name, entry in PROGRAMS.items() if entry.handler is not None}
    assert len(handled) >= 40
    assert SHELL_PROGRAMS <= handled
    # sort/uniq reorder, echo prints the agent's text, mv/cp edit only when they land
    # on a file (then the command is an edit): none of them alone is more than other
    for name in handled - {"sort", "uniq", "echo", "mv", "cp"}:
        assert PROGRAMS[name].category != "other", name


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_categories_are_the_tables(name: str) -> None:
    """A program alone is categorized as its entry says: the category sets are the table."""
    assert command_category([name]) == PROGRAMS[name].category


def test_python_is_one_program_by_many_names() -> None:
    for name in ("python", "python3", "python3.11", "python2.7", "pypy", "pypy3"):
        assert program(name) is PROGRAMS["python"], name
    assert program("pythonista") is None


def infer_category(cmd: str) -> str:
    return infer(ToolCall(call_id="c", tool="Bash", input={"command": cmd})).category


# --------------------------------------------------------------------------- drift cases


@pytest.mark.parametrize("cmd", ["gsed -n '1,3p' f.py", "mawk 'NR<=3' f.py"])
def test_gnu_sed_and_mawk_read_like_sed_and_awk(cmd: str) -> None:
    """Drift: both credited lines 1-3 but were categorized ``other``."""
    res = analyze(cmd, "a\nb\nc\n")
    assert res.reads == [Read("f.py", 1, 3)]
    assert res.category == "read"
    assert infer_category(cmd) == "read"


def test_gnu_sed_in_place_edits() -> None:
    res = analyze("gsed -i 's/a/b/' f.py")
    assert [e.path for e in res.edits] == ["f.py"] and res.category == "edit"


@pytest.mark.parametrize("cmd", ["dash x.sh", "ksh x.sh", "bash x.sh"])
def test_every_shell_that_runs_a_file_runs(cmd: str) -> None:
    """Drift: ``dash``/``ksh`` had the ``bash -c`` handler but no category (``other``)."""
    assert analyze(cmd).category == "run"


def test_bash_c_wraps_only_when_c_comes_before_the_script() -> None:
    """Drift: the categories took any ``-c`` after a shell for a wrapper, the reader only
    one that comes before the first operand (``bash x.sh -c y`` runs x.sh)."""
    assert command_category(["bash", "x.sh", "-c", "y"]) == "run"
    assert command_category(["bash", "-e", "-c", "pytest"]) == "other"   # the inner one counts
    assert analyze("bash -e -c 'pytest -q'").category == "test"
    assert analyze("bash x.sh -c y").programs == ["bash"]
    assert analyze("bash -lc 'cat a.py'").programs == ["cat"]


def test_the_scan_of_rejected_text_unwraps_bash_c_as_the_reader_does() -> None:
    """Drift: the scan only unwrapped ``bash -c`` with ``-c`` as the first flag."""
    assert scan_commands("bash -e -c 'pytest -q'") == [(["pytest", "-q"], None)]
    assert scanned_category(["gsed", "-n", "1p", "f.py"], None) == "read"


@pytest.mark.parametrize("argv,expected", [
    (["python2.7", "-m", "pytest"], "test"),   # a name of python the reader already read
    (["pypy", "fix.py"], "run"),
    (["python", "-m", "pyflakes", "src"], "quality"),   # python -m M is what M is
    (["python", "-m", "pycodestyle", "src"], "quality"),
    (["python", "-m", "http.server"], "run"),
    (["python", "-m", "unittest"], "test"),
    (["hatch", "env", "create"], "env"),   # runners like uv and poetry, known by one rule only
    (["pdm", "install"], "env"),
    (["rye", "run", "pytest"], "test"),
])
def test_programs_known_to_one_rule_are_known_to_all(argv: list[str], expected: str) -> None:
    assert command_category(argv) == expected


def test_a_program_run_from_a_path_is_a_script_unless_the_table_says_more() -> None:
    assert command_category(["./test"]) == "run"       # not the `test` builtin
    assert command_category(["test", "-f", "x"]) == "other"
    assert command_category(["/usr/bin/git", "status"]) == "git"


def test_silent_and_one_line_programs_come_from_the_table() -> None:
    assert PROGRAMS["cd"].silent and PROGRAMS["export"].silent
    assert PROGRAMS["pwd"].lines == 1 and PROGRAMS["pwd"].category == "search"
    # `pwd` prints one line: the listing after it is ls's
    res = analyze("pwd && ls src", "/repo\na.py\nb.py\n")
    assert [r.path for r in res.reads] == ["src/a.py", "src/b.py"]
