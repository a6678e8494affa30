"""Splitting one output between the parts of a command (``shell/segment.py``), and the
pieces it stands on: grep patterns, ``sed -n`` programs, heredoc bodies, syntax errors,
numbered lines a harness trimmed. Pure: a file's current lines are handed in."""

from __future__ import annotations

import pytest

from streameval.reading.output.grep import GrepShape, parse_grep
from streameval.reading.output.numbered import parse_numbered
from streameval.reading.sed import printed_lines, run_sed
from streameval.reading.shell import analyze, settle
from streameval.reading.shell.patterns import grep_matcher
from streameval.reading.shell.syntax import parse

A = ["def a():", "    return None", "", "", "def b():", "    x = 1", "    return None", "",
     "", "def c():", "    return 2"]
B = ["import os", "", "def one():", "    return None", "", "", "def two():", "    return 1"]
FILES = {"a.py": A, "b.py": B}


def lookup(seg):
    return FILES.get(seg.path)


def out(*parts: list[str]) -> str:
    return "".join(ln + "\n" for p in parts for ln in p)


def lines_of(reads, path: str) -> set[int]:
    got: set[int] = set()
    for r in reads:
        if r.path != path or r.listing:
            continue
        assert r.shown is not None and r.shown.numbers is not None, r
        got.update(r.shown.numbers)
    return got


def split(command: str, output: str):
    res = analyze(command, output, "/r", defer=True)
    assert len(res.pending) == 1, res
    return settle(res.pending[0], lookup)


def test_two_files_each_their_own_lines():
    reads = split("sed -n '1,4p' a.py && sed -n '3,6p' b.py", out(A[0:4], B[2:6]))
    assert lines_of(reads, "a.py") == {1, 2, 3, 4} and lines_of(reads, "b.py") == {3, 4, 5, 6}


def test_one_file_in_falling_order_and_one_program_in_file_order():
    reads = split("sed -n '5,8p' a.py && sed -n '1,2p' a.py", out(A[4:8], A[0:2]))
    assert lines_of(reads, "a.py") == {1, 2, 5, 6, 7, 8}
    reads = split("sed -n '5,8p;1,2p' a.py", out(A[0:2], A[4:8]))   # sed prints in file order
    assert lines_of(reads, "a.py") == {1, 2, 5, 6, 7, 8}


def test_echo_separators_headers_and_cat_of_two():
    reads = split("sed -n '1,3p' a.py; echo ---; sed -n '1,2p' b.py", out(A[0:3], ["---"], B[0:2]))
    assert lines_of(reads, "a.py") == {1, 2, 3} and lines_of(reads, "b.py") == {1, 2}
    reads = split("head -n 2 a.py b.py", out(["==> a.py <=="], A[0:2], ["", "==> b.py <=="],
                                               B[0:2]))
    assert lines_of(reads, "a.py") == {1, 2} and lines_of(reads, "b.py") == {1, 2}
    reads = split("cat b.py a.py", out(B, A))
    assert lines_of(reads, "b.py") == set(range(1, 9)) and lines_of(reads, "a.py") == set(range(1, 12))


def test_numbered_parts_and_a_failed_one():
    numbered = [f"{k:6d}\t{A[k - 1]}" for k in range(5, 8)]
    reads = split("nl -ba a.py | sed -n '5,7p' && cat missing.py && sed -n '1p' b.py",
                  out(numbered, ["cat: missing.py: No such file or directory"], B[0:1]))
    assert lines_of(reads, "a.py") == {5, 6, 7} and lines_of(reads, "b.py") == {1}


def test_a_grep_ends_where_its_pattern_stops_and_its_or_else_never_ran():
    res = analyze('grep -r "one" . && grep -r "two" .', "./b.py:def one():\n./b.py:def two():\n",
                  "/r", defer=True)
    reads = settle(res.pending[0], lookup)
    assert [r.shown.lines for r in reads] == [("def one():",), ("def two():",)]
    res = analyze("grep -n one b.py || cat a.py", "3:def one():\n", "/r", defer=True)
    reads = settle(res.pending[0], lookup)
    assert [(r.path, r.shown.numbers) for r in reads] == [("b.py", (3,))]


def test_a_harness_cut_is_split_from_both_sides():
    # the head: a.py 1-6 and the start of line 7; the tail: the end of b.py's line 8
    text = out(A[0:6]) + "    ret" + "\n[... 120 characters elided ...]\n" + "turn 1\n"
    reads = split("cat a.py && cat b.py", text)
    assert lines_of(reads, "a.py") == set(range(1, 8)) and lines_of(reads, "b.py") == {8}
    (a,) = [r for r in reads if r.path == "a.py"]
    (b,) = [r for r in reads if r.path == "b.py"]
    assert a.shown.cut_tail and b.shown.cut_head   # each a piece of its edge line


def test_without_the_files_windows_give_sizes():
    res = analyze("sed -n '1,4p' a.py && sed -n '3,6p' b.py", out(A[0:4], B[2:6]), "/r")
    assert [(r.path, r.start, r.end, len(r.shown.lines)) for r in res.reads] == \
        [("a.py", 1, 4, 4), ("b.py", 3, 6, 4)]


@pytest.mark.parametrize("pattern,kw,line,hit", [
    ("def \\(one\\|two\\)", {}, "def two():", True),          # BRE groups and alternation
    ("(x)", {}, "f(x)", True),                                # BRE: parentheses literal
    ("a+b", {"extended": True}, "aaab", True),
    ("a+b", {}, "a+b", True),
    ("[[:digit:]]\\{2\\}", {}, "x 12", True),
    ("\\<one\\>", {}, "someone", False),
    ("ONE", {"icase": True}, "def one():", True),
    ("one", {"invert": True}, "def one():", False),
    ("a.b", {"fixed": True}, "axb", False),
])
def test_grep_patterns(pattern, kw, line, hit):
    m = grep_matcher([pattern], **kw)
    assert m is not None and m(line) is hit


def test_sed_n_regex_ranges_and_r_file():
    lines = [x + "\n" for x in A]
    assert printed_lines(lines, ["/def b/,/return/p"]) == [5, 6, 7]
    assert printed_lines(lines, ["/def/p"]) == [1, 5, 10]
    assert printed_lines(lines, ["s/x/y/p"]) is None
    assert run_sed(["x\n", "y\n"], ["/x/r s.txt"], files={"s.txt": "N1\nN2\n"}) == \
        ["x\n", "N1\n", "N2\n", "y\n"]


def test_a_heredoc_keeps_its_indentation_and_blank_lines():
    (pipe,) = parse("cat <<'EOF' > s.py\n\n    def x():\n        pass\nEOF")[0]
    assert pipe[0].heredoc == "\n    def x():\n        pass\n"


def test_the_commands_before_a_syntax_error_ran():
    cmd = "sed -i '1d' a.py\necho done\n&& cat a.py"
    res = analyze(cmd, "done\nbash: -c: line 3: syntax error near unexpected token `&&'\n", "/r")
    assert [e.path for e in res.edits] == ["a.py"] and res.category == "edit"
    res = analyze("cat a.py && (", "bash: -c: line 1: syntax error near unexpected token `('\n")
    assert res.edits == [] and res.reads == []


def test_grep_context_keeps_blank_lines_in_groups():
    hits = parse_grep(["def b():", "    x = 1", "", "--", "def c():", "    return 2"],
                      GrepShape("grep", numbered=False, single="a.py", context=True))
    assert [t for _, t in hits.lines["a.py"]] == ["def b():", "    x = 1", "", "def c():",
                                                  "    return 2"]
    assert hits.runs == {"a.py": [3, 2]}


def test_a_numbered_blank_last_line_whose_tab_a_harness_trimmed():
    got = parse_numbered("    75\treturn cmd\n    76")
    assert got.numbers == [75, 76] and got.lines == ["return cmd", ""]
