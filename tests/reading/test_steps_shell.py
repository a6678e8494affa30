"""docs/metrics.md §6, "Pitfalls other tools fall into": one end-to-end test each.

Every test goes the whole way: a ``ToolCall`` as an adapter emits it (tool name, input,
the output the agent saw, cwd) -> ``StepBuilder.consume`` over a real git repository at
its base commit -> a ``Step`` with repo-relative paths and base-commit line ranges. The
numbers are clamped to what the file had (what was shown wins over what was asked), and
the second half replays each edit kind before the same reads, so the lines the agent saw
after its own edit come back as base-commit lines.

The repository (``/testbed`` in the traces):

- ``src/a.py``: 120 lines ``a1``..``a120``; ``src/small.py``: 23 lines; ``src/hundred.py``:
  100 lines; ``big.txt``: 2,500 lines (Claude's 2,000-line default must cut it);
- ``sub/f.py`` (30 lines) and a top-level ``f.py`` (10 lines) with the same name, so a
  ``cd sub && cat f.py`` read of the wrong one cannot pass.
"""

from __future__ import annotations

import pytest
from gitrepo import make_repo

from streameval.errors import Reason
from streameval.model import Step, ToolCall
from streameval.reading.steps import CallOutcome, StepBuilder
from streameval.sources.repo import GitRepo

T = "/testbed"
A = f"{T}/src/a.py"


def _lines(prefix: str, n: int) -> str:
    return "".join(f"{prefix}{i}\n" for i in range(1, n + 1))


FILES = {"src/a.py": _lines("a", 120), "src/small.py": _lines("s", 23),
         "src/hundred.py": _lines("h", 100), "big.txt": _lines("g", 2500),
         "sub/f.py": _lines("f", 30), "f.py": _lines("top", 10), "docs/empty.txt": ""}


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("pitfalls") / "repo"
    sha = make_repo(root, FILES)[0]
    return GitRepo(root).at(sha)


@pytest.fixture
def b(view) -> StepBuilder:
    return StepBuilder(view, roots=[T])


_n = iter(range(1, 10**6))


def call(tool: str, inp: dict, output: str | None = None, cwd: str | None = T,
         **kw) -> ToolCall:
    k = next(_n)
    return ToolCall(call_id=f"p{k}", tool=tool, input=inp, output=output, cwd=cwd,
                    started_at=float(k), **kw)


def bash(command: str, output: str | None = None, **kw) -> ToolCall:
    return call("Bash", {"command": command}, output, **kw)


def claude_numbered(first: int, last: int, prefix: str = "a") -> str:
    """Claude Code's Read result text: ``     45→a45``."""
    return "\n".join(f"{i:6d}→{prefix}{i}" for i in range(first, last + 1))


def cat_n(first: int, last: int, prefix: str = "a") -> str:
    """``cat -n`` / ``nl -ba`` / str_replace_editor output: ``    45\\ta45``."""
    return "\n".join(f"{i:6d}\t{prefix}{i}" for i in range(first, last + 1)) + "\n"


def plain(first: int, last: int, prefix: str = "a") -> str:
    return "".join(f"{prefix}{i}\n" for i in range(first, last + 1))


def step(b: StepBuilder, c: ToolCall) -> Step:
    out = b.consume(c)
    assert out.step is not None, (c, out)
    assert all(not p.startswith("/") for p in out.step.files), out.step.files
    return out.step


def spans(b: StepBuilder, c: ToolCall) -> dict[str, list[tuple[int, int]]]:
    s = step(b, c)
    assert set(s.spans) == set(s.files), s   # every file read here shows lines
    return s.spans


def nothing(out: CallOutcome) -> None:
    """A call that showed no line and no name of any repo file."""
    assert out.step is None and out.reads == [], out


# =========================================================================== pitfalls

def test_claude_offset_is_the_first_line_shown(b):
    """offset 45, limit 20 is lines 45-64 (not 46-65, not 45-65), asked or shown."""
    asked = call("Read", {"file_path": A, "offset": 45, "limit": 20})
    assert spans(b, asked) == {"src/a.py": [(45, 64)]}
    shown = call("Read", {"file_path": A, "offset": 45, "limit": 20},
                 output=claude_numbered(45, 64))
    assert spans(b, shown) == {"src/a.py": [(45, 64)]}
    structured = call("Read", {"file_path": A, "offset": 45, "limit": 20},
                      output=claude_numbered(45, 64),
                      structured={"file": {"filePath": A, "startLine": 45, "numLines": 20,
                                           "totalLines": 120}})
    assert spans(b, structured) == {"src/a.py": [(45, 64)]}
    assert spans(b, call("Read", {"file_path": A, "offset": 1, "limit": 1})) == \
        {"src/a.py": [(1, 1)]}


def test_claude_read_without_limit_shows_up_to_2000_lines(b):
    big = f"{T}/big.txt"
    assert spans(b, call("Read", {"file_path": big})) == {"big.txt": [(1, 2000)]}
    assert spans(b, call("Read", {"file_path": big, "offset": 100})) == {"big.txt": [(100, 2099)]}
    assert spans(b, call("Read", {"file_path": big}, output=claude_numbered(1, 2000, "g"))) == \
        {"big.txt": [(1, 2000)]}
    # ... and a shorter file shows what it has
    assert spans(b, call("Read", {"file_path": A})) == {"src/a.py": [(1, 120)]}
    assert spans(b, call("Read", {"file_path": A, "offset": 100})) == {"src/a.py": [(100, 120)]}


@pytest.mark.parametrize("command", ["head -20 src/a.py", "head -n 20 src/a.py",
                                     "head -n20 src/a.py", "head --lines=20 src/a.py",
                                     "head --lines 20 src/a.py", "cat src/a.py | head -20",
                                     "cat -n src/a.py | head -n 20"])
def test_head_dash_20_is_head_n_20(b, command):
    assert spans(b, bash(command)) == {"src/a.py": [(1, 20)]}
    assert spans(b, bash(command, output=plain(1, 20))) == {"src/a.py": [(1, 20)]}


def test_head_of_a_short_file_is_the_whole_file(b):
    assert spans(b, bash("head -50 src/small.py", output=plain(1, 23, "s"))) == \
        {"src/small.py": [(1, 23)]}


@pytest.mark.parametrize("command, lines", [
    ("tail -n 20 src/hundred.py", (81, 100)),
    ("tail -20 src/hundred.py", (81, 100)),
    ("tail -n20 src/hundred.py", (81, 100)),
    ("cat src/hundred.py | tail -n 20", (81, 100)),
    ("tail -n +20 src/hundred.py", (20, 100)),
    ("tail --lines=+20 src/hundred.py", (20, 100)),
    ("tail -n 200 src/hundred.py", (1, 100)),
])
def test_tail_n_is_the_last_lines_and_plus_n_is_from_that_line(b, command, lines):
    a, z = lines
    assert spans(b, bash(command)) == {"src/hundred.py": [lines]}
    assert spans(b, bash(command, output=plain(a, z, "h"))) == {"src/hundred.py": [lines]}


@pytest.mark.parametrize("command", ["cat -n src/a.py", "cat -n -- src/a.py", "cat -A src/a.py",
                                     "cat -n src/a.py 2>&1", "nl -ba src/a.py", "nl src/a.py",
                                     "less src/a.py"])
def test_cat_n_reads_the_file_and_the_flag_is_no_file(b, command):
    out = b.consume(bash(command, output=cat_n(1, 120)))
    assert out.step.files == ("src/a.py",) and out.step.spans == {"src/a.py": [(1, 120)]}
    assert out.problems == []            # "-n" was never looked up as a path
    assert [r.repo_path for r in out.reads] == ["src/a.py"]


@pytest.mark.parametrize("command, output, lines", [
    ("nl -ba src/a.py | sed -n '10,20p'", cat_n(10, 20), (10, 20)),
    ("nl -ba src/a.py | sed -n '10,20p'", None, (10, 20)),
    ("cat -n src/a.py | sed -n '10,20p'", cat_n(10, 20), (10, 20)),
    ("nl -ba src/a.py | sed -n 10,20p", cat_n(10, 20), (10, 20)),
    ("nl -ba src/small.py | sed -n '10,200p'", cat_n(10, 23, "s"), (10, 23)),
    ("nl -ba src/a.py | head -n 20 | tail -n 5", cat_n(16, 20), (16, 20)),
])
def test_nl_ba_piped_to_sed_reads_lines_a_to_b(b, command, output, lines):
    path = "src/small.py" if "small" in command else "src/a.py"
    assert spans(b, bash(command, output=output)) == {path: [lines]}


def test_grep_rn_piped_to_head_reads_the_lines_in_the_output(b):
    """Not the pattern (a path-like string), not the directory: the lines printed."""
    output = "src/a.py:11:a11\nsrc/a.py:110:a110\nsrc/small.py:3:s3\n"
    s = step(b, bash("grep -rn 'src/hundred.py' src | head -50", output=output))
    assert s.files == ("src/a.py", "src/small.py")
    assert s.spans == {"src/a.py": [(11, 11), (110, 110)], "src/small.py": [(3, 3)]}
    # head -2 cut the output: only the two lines printed count
    s = step(b, bash("grep -rn a1 src | head -2", output="src/a.py:1:a1\nsrc/a.py:10:a10\n"))
    assert s.spans == {"src/a.py": [(1, 1), (10, 10)]}
    # an absolute directory, and context lines from -C
    s = step(b, bash(f"grep -rn -C1 a50 {T}/src | head -50",
                     output=f"{T}/src/a.py-49-a49\n{T}/src/a.py:50:a50\n{T}/src/a.py-51-a51\n"))
    assert s.spans == {"src/a.py": [(49, 51)]}


def test_grep_rn_piped_to_head_without_output_invents_no_lines(b):
    out = b.consume(bash("grep -rn a11 src | head -50"))
    assert out.step is None or out.step.spans == {}


@pytest.mark.parametrize("command", ["cd sub && cat f.py", "cd sub; cat f.py",
                                     f"cd {T}/sub && cat f.py", "(cd sub && cat f.py)",
                                     "cd sub && cat -n ./f.py", "cd src && cd ../sub && cat f.py"])
def test_cd_then_cat_reads_the_file_in_that_directory(b, command):
    assert spans(b, bash(command, output=plain(1, 30, "f"))) == {"sub/f.py": [(1, 30)]}


def test_cd_then_cat_from_another_cwd(b):
    c = bash("cd sub && sed -n '2,4p' f.py", output=plain(2, 4, "f"), cwd=f"{T}")
    assert spans(b, c) == {"sub/f.py": [(2, 4)]}
    c = bash("cd ../sub && head -n 3 f.py", output=plain(1, 3, "f"), cwd=f"{T}/src")
    assert spans(b, c) == {"sub/f.py": [(1, 3)]}
    # the cd does not leak into a sibling subshell's read
    c = bash("(cd sub && cat f.py) ; cat f.py", output=plain(1, 30, "f") + plain(1, 10, "top"))
    assert spans(b, c) == {"sub/f.py": [(1, 30)], "f.py": [(1, 10)]}


# --------------------------------------------------------------------------- failed calls


def test_failed_calls_read_nothing(b):
    nothing(b.consume(call("Read", {"file_path": A}, is_error=True,
                           output="<tool_use_error>File does not exist.</tool_use_error>")))
    nothing(b.consume(call("Read", {"file_path": A}, output="File does not exist.")))
    nothing(b.consume(call("Grep", {"pattern": "a1", "path": f"{T}/src",
                                    "output_mode": "content", "-n": True},
                           output="src/a.py:11:a11", is_error=True)))
    nothing(b.consume(call("str_replace_editor", {"command": "view", "path": A},
                           output=f"The path {A} does not exist. Please provide a valid path.")))


@pytest.mark.parametrize("command, error", [
    ("cat src/a.py", "cat: src/a.py: No such file or directory"),
    ("cat -n src/a.py", "cat: src/a.py: No such file or directory"),
    ("sed -n '1,5p' src/a.py", "sed: can't read src/a.py: No such file or directory"),
    ("head -n 5 src/a.py", "head: cannot open 'src/a.py' for reading: No such file or directory"),
    ("tail -n 5 src/a.py", "tail: cannot open 'src/a.py' for reading: No such file or directory"),
    ("nl -ba src/a.py | sed -n '1,5p'", "nl: src/a.py: No such file or directory"),
    ("grep -n a1 src/a.py", "grep: src/a.py: No such file or directory"),
    ("cd sub && cat a.py", "cat: a.py: No such file or directory"),
])
def test_no_such_file_reads_nothing(b, command, error):
    nothing(b.consume(bash(command, output=error + "\n")))


@pytest.mark.parametrize("error", [
    "awk: fatal: cannot open file `src/a.py' for reading: No such file or directory",  # gawk
    "awk: cannot open src/a.py (No such file or directory)",                            # mawk
])
def test_awk_no_such_file_reads_nothing(b, error):
    """Regression: awk's own error forms were not recognised, so a failed
    ``awk 'NR>=1 && NR<=5' f`` still read lines 1-5 of f."""
    nothing(b.consume(bash("awk 'NR>=1 && NR<=5' src/a.py", output=error + "\n")))


def test_one_missing_file_does_not_fail_the_others(b):
    out = plain(1, 23, "s")
    c = bash("cat src/nope.py src/small.py",
             output="cat: src/nope.py: No such file or directory\n" + out)
    assert spans(b, c) == {"src/small.py": [(1, 23)]}


def test_a_grep_filter_that_printed_nothing_read_nothing(b):
    """Regression: ``cat f | grep x`` with no match was a file-level read of f, while
    ``grep x f`` with no match was none; neither showed any of f."""
    nothing(b.consume(bash("cat src/a.py | grep zzz", output="")))
    nothing(b.consume(bash("cat src/a.py | grep -i zzz | head -5", output="")))
    # a match with no line numbers: the text says which lines
    s = step(b, bash("cat src/a.py | grep a11", output="a11\na110\n"))
    assert s.files == ("src/a.py",) and s.spans == {"src/a.py": [(11, 11), (110, 110)]}


# --------------------------------------------------------------------------- clamping


def test_whole_file_reads_are_clamped_to_the_file(b):
    assert spans(b, bash("cat src/a.py", output=plain(1, 120))) == {"src/a.py": [(1, 120)]}
    assert spans(b, bash("cat src/a.py")) == {"src/a.py": [(1, 120)]}
    assert spans(b, bash("sed -n '1,200p' src/small.py", output=plain(1, 23, "s"))) == \
        {"src/small.py": [(1, 23)]}
    assert spans(b, bash("tail -n 20 src/hundred.py")) == {"src/hundred.py": [(81, 100)]}
    assert spans(b, call("str_replace_editor", {"command": "view", "path": f"{T}/src/small.py",
                                                "view_range": [10, 500]})) == \
        {"src/small.py": [(10, 23)]}


def test_read_offset_past_the_end_reads_nothing(b):
    """Regression: it was a file-level step of a file no line of which was shown."""
    out = b.consume(call("Read", {"file_path": A, "offset": 500, "limit": 10}))
    nothing(out)
    assert [p[0] for p in out.problems] == [Reason.BAD_LINE_RANGE]
    # what Claude Code really returns: a warning, and toolUseResult.file.numLines 0
    warning = ("<system-reminder>Warning: the file exists but is shorter than the provided "
               "offset (500). The file has 120 lines.</system-reminder>")
    out = b.consume(call("Read", {"file_path": A, "offset": 500}, output=warning,
                         structured={"file": {"filePath": A, "content": "", "startLine": 500,
                                              "numLines": 0, "totalLines": 120}}))
    nothing(out)
    assert [p[0] for p in out.problems] == [Reason.BAD_LINE_RANGE]
    nothing(b.consume(call("Read", {"file_path": A, "offset": 500}, output=warning)))


def test_read_of_an_empty_file_is_the_file_without_lines(b):
    """Not "past the end": the agent saw the whole (empty) file."""
    c = call("Read", {"file_path": f"{T}/docs/empty.txt"},
             output="<system-reminder>Warning: the file exists but the contents are empty."
                    "</system-reminder>",
             structured={"file": {"filePath": f"{T}/docs/empty.txt", "content": "",
                                  "startLine": 1, "numLines": 0, "totalLines": 0}})
    s = step(b, c)
    assert s.files == ("docs/empty.txt",) and s.spans == {}


def test_shell_range_past_the_end_reads_nothing(b):
    nothing(b.consume(bash("sed -n '500,510p' src/a.py", output="")))
    nothing(b.consume(bash("tail -n +500 src/a.py", output="")))
    nothing(b.consume(bash("nl -ba src/a.py | sed -n '500,510p'")))


def test_what_was_shown_wins_over_what_was_asked(b):
    # the Read asked for 2000 lines; the result shows 45..64 (a truncated result)
    c = call("Read", {"file_path": A, "offset": 45}, output=claude_numbered(45, 64))
    assert spans(b, c) == {"src/a.py": [(45, 64)]}
    # the editor's numbers say which lines were printed
    c = call("str_replace_editor", {"command": "view", "path": A, "view_range": [1, 200]},
             output=f"Here's the result of running `cat -n` on {A}:\n" + cat_n(30, 40))
    assert spans(b, c) == {"src/a.py": [(30, 40)]}
    # a harness that cut a long output (mini-swe-agent) showed its head and tail only
    cut = plain(1, 5).rstrip("\n") + "\n[... 4000 characters elided ...]\n" + plain(118, 120)
    c = call("bash", {"command": "cat src/a.py"}, output=cut, structured={"elided_chars": 4000})
    assert spans(b, c) == {"src/a.py": [(1, 5), (118, 120)]}


# =========================================================================== after edits

NEW = "N1\nN2\nN3\n"
#: src/a.py after 3 lines were inserted after a10: a1..a10, N1..N3, a11..a120 (123 lines)
AFTER = _lines("a", 10) + NEW + "".join(f"a{i}\n" for i in range(11, 121))
DIFF = "--- a/src/a.py\n+++ b/src/a.py\n@@ -9,4 +9,7 @@\n a9\n a10\n+N1\n+N2\n+N3\n a11\n a12\n"
APPLY_PATCH = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n a9\n a10\n+N1\n+N2\n+N3\n"
               " a11\n*** End Patch")

EDIT_KINDS = {
    "claude Edit": lambda: call("Edit", {"file_path": A, "old_string": "a10\n",
                                         "new_string": "a10\n" + NEW},
                                output=f"The file {A} has been updated."),
    "claude Edit replace_all": lambda: call("Edit", {"file_path": A, "old_string": "a10\na11\n",
                                                     "new_string": "a10\n" + NEW + "a11\n",
                                                     "replace_all": True}),
    "claude MultiEdit": lambda: call("MultiEdit", {"file_path": A, "edits": [
        {"old_string": "a10\n", "new_string": "a10\nN1\n"},
        {"old_string": "N1\n", "new_string": NEW}]}),
    "claude Write": lambda: call("Write", {"file_path": A, "content": AFTER}),
    "claude Edit, structuredPatch only": lambda: call(
        "Edit", {"file_path": A, "old_string": "not in the file", "new_string": "x"},
        structured={"structuredPatch": [{"oldStart": 9, "oldLines": 3, "newStart": 9,
                                         "newLines": 6, "lines": [" a9", " a10", "+N1", "+N2",
                                                                  "+N3", " a11"]}]}),
    "codex apply_patch tool": lambda: call("apply_patch", {"input": APPLY_PATCH},
                                           output="Success. Updated the following files:"),
    "codex shell apply_patch": lambda: call("shell", {"command": ["apply_patch", APPLY_PATCH]},
                                            output="Success."),
    "codex shell apply_patch heredoc": lambda: call(
        "shell", {"command": ["bash", "-lc", f"apply_patch <<'PATCH'\n{APPLY_PATCH}\nPATCH"]},
        output="Success."),
    "swe-agent str_replace": lambda: call("str_replace_editor", {
        "command": "str_replace", "path": A, "old_str": "a10\n", "new_str": "a10\n" + NEW},
        output=f"The file {A} has been edited."),
    "swe-agent str_replace via bash": lambda: call(
        "bash", {"command": f"str_replace_editor str_replace {A} --old_str 'a10\n' "
                            f"--new_str 'a10\n{NEW}'"}, output=f"The file {A} has been edited."),
    "swe-agent insert": lambda: call("str_replace_editor", {
        "command": "insert", "path": A, "insert_line": 10, "new_str": NEW.rstrip("\n")}),
    "swe-agent create over the file": lambda: call("str_replace_editor", {
        "command": "create", "path": A, "file_text": AFTER}),
    "openhands edit str_replace": lambda: call("edit", {
        "command": "str_replace", "path": A, "old_str": "a10\n", "new_str": "a10\n" + NEW}),
    "openhands edit insert": lambda: call("edit", {
        "command": "insert", "path": A, "insert_line": 10, "new_str": NEW}),
    "git apply heredoc": lambda: bash(f"git apply <<'EOF'\n{DIFF}EOF", output=""),
    "patch -p1 heredoc": lambda: bash(f"patch -p1 <<'EOF'\n{DIFF}EOF",
                                      output="patching file src/a.py\n"),
    "cat > file heredoc": lambda: bash(f"cat > src/a.py <<'EOF'\n{AFTER}EOF", output=""),
    "sed -i Na (append after line 10)": lambda: bash("sed -i '10a\\N1\\nN2\\nN3' src/a.py",
                                                     output=""),
    "sed -i Ni (insert before line 11)": lambda: bash("sed -i '11i\\N1\\nN2\\nN3' src/a.py",
                                                      output=""),
}

#: (the read after the edit, in current numbers) -> base-commit lines it showed
READS_AFTER = [
    ("Read offset 45 limit 20", lambda: call("Read", {"file_path": A, "offset": 45, "limit": 20}),
     [(42, 61)]),
    ("Read, no limit", lambda: call("Read", {"file_path": A}), [(1, 120)]),
    ("Read shown", lambda: call("Read", {"file_path": A, "offset": 9, "limit": 8},
                                output="\n".join(f"{i:6d}→{t}" for i, t in zip(
                                    range(9, 17), AFTER.split("\n")[8:16]))), [(9, 13)]),
    ("head -20", lambda: bash("head -20 src/a.py"), [(1, 17)]),
    ("head -n 20", lambda: bash("head -n 20 src/a.py"), [(1, 17)]),
    ("tail -n 20", lambda: bash("tail -n 20 src/a.py"), [(101, 120)]),
    ("tail -n +20", lambda: bash("tail -n +20 src/a.py"), [(17, 120)]),
    ("cat -n", lambda: bash("cat -n src/a.py"), [(1, 120)]),
    ("nl -ba | sed -n", lambda: bash("nl -ba src/a.py | sed -n '9,16p'"), [(9, 13)]),
    ("sed -n 1,200p", lambda: bash("sed -n '1,200p' src/a.py"), [(1, 120)]),
    ("grep -rn | head -50", lambda: bash("grep -rn a11 src | head -50",
                                         output="src/a.py:14:a11\nsrc/a.py:113:a110\n"),
     [(11, 11), (110, 110)]),
    ("cd && cat", lambda: bash("cd src && cat a.py"), [(1, 120)]),
    ("editor view", lambda: call("str_replace_editor", {"command": "view", "path": A,
                                                        "view_range": [9, 16]}), [(9, 13)]),
]


@pytest.mark.parametrize("kind", list(EDIT_KINDS))
def test_each_edit_kind_maps_later_reads_back_to_base_lines(b, kind):
    out = b.consume(EDIT_KINDS[kind]())
    assert out.edits == ["src/a.py"] and out.step is None and out.problems == [], out
    assert out.category == "edit"
    assert b.edits.uncertain_files() == []
    assert b.edits.current_text("src/a.py") == AFTER or kind.endswith("structuredPatch only")
    for name, make, base in READS_AFTER:
        assert spans(b, make()) == {"src/a.py": base}, name
    # the agent's own three lines map to no base line: the file, but no line of it
    s = step(b, bash("nl -ba src/a.py | sed -n '11,13p'"))
    assert s.files == ("src/a.py",) and s.spans == {}
    # the provisional patch is exactly the insertion
    body = b.provisional_patch().split("+++ b/src/a.py\n", 1)[1].splitlines()
    assert [ln[0] for ln in body if ln[:1] in "+-"] == ["+"] * 3


@pytest.mark.parametrize("edit, read, base", [
    # mini-swe-agent django-12125: a line added at the top shifts the whole file
    (r"sed -i '1s/^/import sys\n/' src/a.py", "51:a50\n", [(50, 50)]),
    ("sed -i '5,7d' src/a.py", "5:a8\n", [(8, 8)]),
    ("sed -i '5d' src/a.py", "5:a6\n", [(6, 6)]),
    (r"sed -i '5c\x = 1\ny = 2' src/a.py", "7:a6\n", [(6, 6)]),
    ("sed -i '30s/a30/A30/' src/a.py", "31:a31\n", [(31, 31)]),
    (r"sed -i.bak '2i\    two' src/a.py", "3:a2\n", [(2, 2)]),
])
def test_sed_i_at_line_numbers_is_replayed(b, edit, read, base):
    """Regression: every ``sed -i`` was an edit we could not replay (identity mapping),
    though one command at fixed line numbers says exactly which lines moved."""
    out = b.consume(bash(edit, output=""))
    assert out.edits == ["src/a.py"] and out.problems == [] and out.category == "edit"
    assert b.edits.uncertain_files() == []
    assert spans(b, bash("grep -n a src/a.py | head -1", output=read)) == {"src/a.py": base}


@pytest.mark.parametrize("edit, window", [
    # /a5/ is every line holding "a5": a5 and a50..a59 (the interpreter runs the regex)
    (lambda: bash("sed -i 's/a5/A5/' src/a.py", output=""), [(45, 49), (60, 64)]),
    (lambda: bash("sed -i '/a5/d' src/a.py", output=""), [(46, 49), (60, 75)]),
    (lambda: bash("sed -i '5d;7d' src/a.py", output=""), [(47, 66)]),
    (lambda: bash("cd src && sed -i.bak -e 's/a5/A5/' a.py", output=""), [(45, 49), (60, 64)]),
])
def test_sed_programs_are_run_on_the_current_text(b, edit, window):
    """Regex addresses, several commands: the program is run on the text we have."""
    out = b.consume(edit())
    assert out.edits == ["src/a.py"] and out.step is None
    assert b.edits.uncertain_files() == []
    assert spans(b, call("Read", {"file_path": A, "offset": 45, "limit": 20})) == \
        {"src/a.py": window}
    assert spans(b, bash("tail -n 20 src/a.py")) == {"src/a.py": [(101, 120)]}


def test_edits_without_their_text_keep_the_mapping_and_say_so(b):
    out = b.consume(call("file_change", {"changes": [{"path": A, "kind": "update"}]}))
    assert out.edits == ["src/a.py"] and out.step is None
    assert b.edits.uncertain_files() == ["src/a.py"]
    assert spans(b, call("Read", {"file_path": A, "offset": 45, "limit": 20})) == \
        {"src/a.py": [(45, 64)]}
    assert spans(b, bash("tail -n 20 src/a.py")) == {"src/a.py": [(101, 120)]}


def test_edit_then_read_past_the_new_end_reads_nothing(b):
    """After deleting 100 lines, an offset that was inside the base file is past the end."""
    b.consume(call("Write", {"file_path": A, "content": _lines("a", 20)}))
    nothing(b.consume(call("Read", {"file_path": A, "offset": 50, "limit": 10})))
    assert spans(b, call("Read", {"file_path": A, "offset": 15})) == {"src/a.py": [(15, 20)]}


# --------------------------------------------------------------------------- reverts

def _insert_then(b: StepBuilder, *calls: ToolCall,
                 shown: tuple[int, int] = (20, 24)) -> dict[str, list[tuple[int, int]]]:
    """Insert 3 lines after a10, run ``calls``, then show lines 20-24 of the file: by
    the map alone (no output), and by the text the file then had (``shown``: which base
    lines those are), which must agree."""
    b.consume(EDIT_KINDS["claude Edit"]())
    for c in calls:
        b.consume(c)
    by_map = spans(b, bash("sed -n '20,24p' src/a.py"))
    by_text = spans(b, bash("sed -n '20,24p' src/a.py", output=plain(*shown)))
    assert by_map == by_text
    return by_text


@pytest.mark.parametrize("command, cwd", [
    ("git checkout -- .", T), ("git checkout .", T), ("git restore .", T),
    ("git checkout -- src", T), ("git checkout -- src/", T), ("git checkout -- .", f"{T}/src"),
    ("cd src && git restore .", T), ("git reset --hard", T), ("git reset --hard HEAD", T),
    ("git reset --hard", f"{T}/sub"), ("git checkout -- :/", f"{T}/sub"),
])
def test_reverting_a_directory_or_the_tree_puts_its_files_back(b, command, cwd):
    """Regression: only single-file reverts were followed, so after ``git checkout -- .``
    or ``git reset --hard`` reads kept being shifted by edits no longer in the file, and
    the provisional patch kept them."""
    assert _insert_then(b, bash(command, output="", cwd=cwd)) == {"src/a.py": [(20, 24)]}
    assert b.provisional_patch() == "" and b.edits.edited_files() == []


@pytest.mark.parametrize("command, cwd", [
    ("git checkout -- sub", T), ("git checkout -- .", f"{T}/sub"), ("git reset --soft HEAD", T),
    ("git reset --hard HEAD~1", T), ("git reset HEAD src/a.py", T),
])
def test_reverting_something_else_keeps_the_edits(b, command, cwd):
    assert _insert_then(b, bash(command, output="", cwd=cwd), shown=(17, 21)) == \
        {"src/a.py": [(17, 21)]}
    assert b.edits.edited_files() == ["src/a.py"]


def test_git_stash_and_pop(b):
    """Regression: ``git stash`` puts the tree back at HEAD and ``git stash pop`` brings
    the edits back; neither was followed."""
    assert _insert_then(b, bash("git stash", output="Saved working directory")) == \
        {"src/a.py": [(20, 24)]}
    assert b.provisional_patch() == ""
    out = b.consume(bash("git stash pop", output="On branch main"))
    assert out.category == "git"
    assert spans(b, bash("sed -n '20,24p' src/a.py", output=plain(17, 21))) == \
        {"src/a.py": [(17, 21)]}
    assert "+N1" in b.provisional_patch()
    # stash, run the tests, pop, in one command: the edits are still there
    b.consume(bash("git stash && python -m pytest -q; git stash pop", output="1 failed"))
    assert spans(b, bash("tail -n 20 src/a.py")) == {"src/a.py": [(101, 120)]}
    assert spans(b, call("Read", {"file_path": A, "offset": 45, "limit": 20})) == \
        {"src/a.py": [(42, 61)]}


def test_sed_range_over_several_files_is_one_stream(b):
    """Regression: ``sed -n '20,30p' small a`` was read as lines 20-30 of *each* file;
    sed numbers the files as one stream (lines 20-23 of small.py, 1-7 of a.py here): the
    text says which lines of which file were shown, and without text only the files."""
    s = step(b, bash("sed -n '20,30p' src/small.py src/a.py",
                     output=plain(20, 23, "s") + plain(1, 7)))
    assert s.spans == {"src/small.py": [(20, 23)], "src/a.py": [(1, 7)]}
    s = step(b, bash("sed -n '20,30p' src/small.py src/a.py"))
    assert s.files == ("src/small.py", "src/a.py") and s.spans == {}
    # -s (separate files) really is per file
    assert spans(b, bash("sed -s -n '20,30p' src/small.py src/a.py")) == \
        {"src/small.py": [(20, 23)], "src/a.py": [(20, 30)]}


def test_cd_in_one_claude_stream_bash_call_holds_for_the_next(tmp_path):
    """Claude Code's shell keeps a `cd` between Bash calls; stream-json does not record the
    cwd per call, so the builder carries it: `cd sub` then `cat f` reads sub/f, not f."""
    from gitrepo import make_repo

    from streameval.model import ToolCall
    from streameval.reading.steps import StepBuilder
    from streameval.sources.repo import GitRepo

    sha = make_repo(tmp_path / "r", {"f": "top\n", "sub/f": "a\nb\n"})[-1]
    b = StepBuilder(GitRepo(tmp_path / "r").at(sha), roots=["/ws"])

    def bash(i, cmd, out, persists=True):
        return b.consume(ToolCall(call_id=str(i), tool="Bash", input={"command": cmd},
                                  output=out, cwd="/ws", cwd_persists=persists))

    assert bash(1, "cd sub", "").step is None
    assert bash(2, "cat f", "a\nb\n").step.spans == {"sub/f": [(1, 2)]}
    # a session transcript records the real cwd on every line: nothing is carried
    b2 = StepBuilder(GitRepo(tmp_path / "r").at(sha), roots=["/ws"])
    b2.consume(ToolCall(call_id="1", tool="Bash", input={"command": "cd sub"}, output="", cwd="/ws"))
    step = b2.consume(ToolCall(call_id="2", tool="Bash", input={"command": "cat f"},
                               output="top\n", cwd="/ws")).step
    assert step.spans == {"f": [(1, 1)]}


def test_a_bug_on_one_call_is_an_internal_error_and_the_next_call_is_read(b, monkeypatch, caplog):
    """Fault injected into the command parser: that call credits nothing and says why,
    the log has the traceback, and the call after it is credited as usual."""
    from streameval.reading import infer as infer_mod

    real = infer_mod.analyze

    def broken(command, *a, **kw):
        if "boom" in command:
            raise ValueError("injected")
        return real(command, *a, **kw)

    monkeypatch.setattr(infer_mod, "analyze", broken)
    out = b.consume(call("Bash", {"command": "cat boom.py"}, "x\n"))
    assert out.step is None
    assert [(r.value, "injected" in m) for r, m in out.problems] == [("internal_error", True)]
    assert "internal error on call" in caplog.text
    path = next(iter(FILES))
    text = FILES[path]
    shown = b.consume(call("Bash", {"command": f"cat {path}"}, text))
    assert shown.step is not None and shown.step.files == (path,)
