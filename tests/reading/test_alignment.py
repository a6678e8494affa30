"""Alignment: the text a call showed decides which base-commit lines it credits.

Every pattern of the reading issue on a real git repository: a Python script that
inserts lines (an edit no command parser follows), then numbered and unnumbered reads;
regex ``sed -i`` edits; ``grep -A`` without ``-n``; ``cat f | grep -n``; harness-cut
output in mini-swe-agent and SWE-agent forms; an unanswered call; ``a && b`` with ``b``
failing after an edit. Expected base lines are worked out by hand from ``BASE`` below.
"""

from __future__ import annotations

import pytest
from gitrepo import FUNC_NAMES, make_repo, module_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.model import ToolCall
from streameval.reading.align import align
from streameval.reading.steps import StepBuilder
from streameval.sources.basetext import BaseText
from streameval.sources.repo import GitRepo

T = "/testbed"


#: 1-2 header; then 8 functions of 7 lines each: alpha at 3, beta 10, gamma 17, delta 24,
#: eps 31, zeta 38, eta 45, theta 52 (line 3+7k: "def ...", +4: "    return None")
BASE_LINES = module_lines()
BASE = "\n".join(BASE_LINES) + "\n"
BIG = "".join(f"line {i} of the big file\n" for i in range(1, 301))


def line_of(name: str) -> int:
    return 3 + 7 * FUNC_NAMES.index(name)


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    root = tmp_path_factory.mktemp("align") / "repo"
    sha = make_repo(root, {"pkg/mod.py": BASE, "pkg/big.txt": BIG})[0]
    return GitRepo(root).at(sha)


@pytest.fixture
def b(view) -> StepBuilder:
    return StepBuilder(view, roots=[T])


_n = iter(range(1, 10**6))


def bash(command: str, output: str | None, **kw) -> ToolCall:
    return ToolCall(call_id=f"c{next(_n)}", tool="bash", input={"command": command},
                    output=output, cwd=T, **kw)


def current(lines: list[str], a: int, b: int, numbered: bool = False) -> str:
    """Lines a..b of a current text, as `sed -n` (or `nl -ba | sed -n`) prints them."""
    out = lines[a - 1:b]
    if numbered:
        return "".join(f"{a + i:6d}\t{t}\n" for i, t in enumerate(out))
    return "".join(t + "\n" for t in out)


def spans(b: StepBuilder, call: ToolCall) -> dict[str, list[tuple[int, int]]]:
    out = b.consume(call)
    assert out.step is not None, out
    return out.step.spans


INSERT_SCRIPT = ("cat <<'EOF' > fix.py\n"
                 "lines = open('pkg/mod.py').readlines()\n"
                 "lines.insert(9, 'X = 1\\nY = 2\\n')\n"
                 "open('pkg/mod.py', 'w').writelines(lines)\n"
                 "EOF\n"
                 "python fix.py")
#: the file after the script: two lines inserted after base line 9 (before beta)
AFTER_INSERT = BASE_LINES[:9] + ["X = 1", "Y = 2"] + BASE_LINES[9:]


def test_a_python_script_that_inserts_lines_is_an_edit_found_then_followed(b):
    out = b.consume(bash(INSERT_SCRIPT, ""))
    assert out.category == "edit" and out.edits == ["pkg/mod.py"]
    # grep -n shows the current number of `def eps` (base 31, now 33)
    out = b.consume(bash("grep -n 'def eps' pkg/mod.py", "33:def eps(x):\n"))
    assert out.step.spans == {"pkg/mod.py": [(31, 31)]}
    # the map moved, but to follow the script's edit, which is already counted
    assert out.found_edits == []
    # a window after the insertion: current 30-40 are base 28-38
    out = b.consume(bash("sed -n '30,40p' pkg/mod.py", current(AFTER_INSERT, 30, 40)))
    assert out.step.spans == {"pkg/mod.py": [(28, 38)]} and out.found_edits == []
    # a numbered window over the insertion: the agent's two lines credit nothing
    out = b.consume(bash("nl -ba pkg/mod.py | sed -n '8,14p'",
                         current(AFTER_INSERT, 8, 14, numbered=True)))
    assert out.step.spans == {"pkg/mod.py": [(8, 12)]}
    assert out.reads[0].agent == 2 and out.reads[0].aligned == 5
    # and the map now knows: a read with no output kept lands on the right base lines
    assert spans(b, bash("sed -n '40,44p' pkg/mod.py", None)) == {"pkg/mod.py": [(38, 42)]}


def test_the_first_read_after_an_invisible_edit_corrects_the_map(b):
    """No edit record at all (a script run elsewhere): the read finds the shift."""
    out = b.consume(bash("sed -n '30,40p' pkg/mod.py", current(AFTER_INSERT, 30, 40)))
    assert out.step.spans == {"pkg/mod.py": [(28, 38)]}
    assert out.found_edits == ["pkg/mod.py"]          # an edit the trace never recorded
    assert b.edits.edited_files() == ["pkg/mod.py"]
    # a second read showing more of the same edit finds nothing new
    out = b.consume(bash("nl -ba pkg/mod.py | sed -n '8,14p'",
                         current(AFTER_INSERT, 8, 14, numbered=True)))
    assert out.step.spans == {"pkg/mod.py": [(8, 12)]} and out.found_edits == []
    assert spans(b, bash("sed -n '50,52p' pkg/mod.py", None)) == {"pkg/mod.py": [(48, 50)]}


def test_regex_sed_i_moves_lines_and_a_later_head_is_credited_by_text(b):
    """sphinx-10449's shape: `sed -i "/def .../a ..."` inserts; `head` then shows fewer
    base lines than it printed."""
    out = b.consume(bash("sed -i '/def alpha(x):/a\\    # note one\\n    # note two' pkg/mod.py", ""))
    assert out.edits == ["pkg/mod.py"] and b.edits.uncertain_files() == []
    after = BASE_LINES[:3] + ["    # note one", "    # note two"] + BASE_LINES[3:]
    assert b.edits.current_text("pkg/mod.py") == "\n".join(after) + "\n"
    assert spans(b, bash("head -n 25 pkg/mod.py", current(after, 1, 25))) == \
        {"pkg/mod.py": [(1, 23)]}
    assert spans(b, bash("head -n 25 pkg/mod.py", None)) == {"pkg/mod.py": [(1, 23)]}


def test_grep_context_without_numbers_is_text(b):
    out = "def gamma(x):\n    value = x * 4\n    if value:\n        return value\n"
    assert spans(b, bash("grep -A3 'def gamma' pkg/mod.py", out)) == {"pkg/mod.py": [(17, 20)]}


def test_cat_piped_to_grep_n_numbers_are_the_files(b):
    hits = "".join(f"{line_of(n) + 4}:    return None\n" for n in ("beta", "gamma"))
    assert spans(b, bash("cat pkg/mod.py | grep -n 'return None' | head -2", hits)) == \
        {"pkg/mod.py": [(14, 14), (21, 21)]}


def test_repeated_lines_are_placed_between_distinctive_ones(b):
    """Unnumbered text of blank lines and `return None`: placed by the unique lines
    around them, in order, not at their first occurrence in the file."""
    text = current(BASE_LINES, 38, 45)      # zeta, its two blank lines, eta's def
    assert spans(b, bash("sed -n '/def zeta/,/def eta/p' pkg/mod.py", text)) == \
        {"pkg/mod.py": [(38, 45)]}


def test_mini_swe_agent_head_and_tail_cut_mid_line(b):
    lines = BIG.splitlines()
    head = "\n".join(lines[:50])[:-6]            # line 50 cut mid-way
    tail = "\n".join(lines[259:])[4:]            # line 260 starts mid-way
    cut = head + "\n[... 7000 characters elided ...]\n" + tail
    assert spans(b, bash("cat pkg/big.txt", cut)) == {"pkg/big.txt": [(1, 50), (260, 300)]}
    # a numbered window the harness cut: only the lines printed count
    nl = "".join(f"{i:6d}\t{lines[i - 1]}\n" for i in range(99, 140))
    nl += "[... 9000 characters elided ...]\n"
    nl += "".join(f"{i:6d}\t{lines[i - 1]}\n" for i in range(250, 301))
    assert spans(b, bash("nl -ba pkg/big.txt | sed -n '99,400p'", nl)) == \
        {"pkg/big.txt": [(99, 139), (250, 300)]}


def test_swe_agent_elision_markers_show_nothing(b):
    view = ("<NOTE>This file is too large to display entirely. Showing abbreviated version."
            "</NOTE>\n     1 \"\"\"A module.\"\"\"\n     2 import os\n     3 def alpha(x):\n"
            "     4 ... eliding lines 4-8 ...\n     9 \n    10 def beta(x):\n")
    call = ToolCall("v1", "str_replace_editor", {"command": "view", "path": f"{T}/pkg/mod.py"},
                    view, cwd=T)
    assert spans(b, call) == {"pkg/mod.py": [(1, 3), (9, 10)]}


def test_a_call_with_no_result_read_nothing(b):
    call = ToolCall("r1", "Read", {"file_path": f"{T}/pkg/mod.py"}, None, cwd=T,
                    interrupted=True)
    out = b.consume(call)
    assert out.step is None and out.reads == []


def test_a_failing_chain_keeps_what_ran_before_the_failure(b):
    """`a && b && c` returned 2: the delete happened, the print was shown."""
    after = BASE_LINES[:2] + BASE_LINES[3:]          # line 3 (def alpha) deleted
    out = b.consume(bash("sed -i '3d' pkg/mod.py && sed -n '1,5p' pkg/mod.py && python3 x.py",
                         current(after, 1, 5) + "python3: can't open file 'x.py'\n",
                         is_error=True))
    assert out.edits == ["pkg/mod.py"]
    assert out.step.spans == {"pkg/mod.py": [(1, 2), (4, 6)]}


@pytest.mark.parametrize(("command", "after"), [
    # the revert first, then the insert: the insert holds
    ("git checkout pkg/mod.py && sed -i '/def beta/i\\# b' pkg/mod.py",
     BASE_LINES[:9] + ["# b"] + BASE_LINES[9:]),
    # the insert, then the revert: nothing holds
    ("sed -i '/def beta/i\\# b' pkg/mod.py && git checkout -- pkg/mod.py", BASE_LINES),
    # stashed, edited, the stash brought back over it (a different file's edit stays)
    ("git stash && sed -i '3d' pkg/mod.py && git checkout pkg/mod.py && git stash pop",
     BASE_LINES[:2] + ["X"] + BASE_LINES[2:]),
])
def test_reverts_and_stashes_happen_in_command_order(b, command, after):
    b.consume(bash("sed -i '2a\\X' pkg/mod.py", ""))      # an edit before the command
    b.consume(bash(command, ""))
    assert b.edits.current_text("pkg/mod.py") == "\n".join(after) + "\n"


def test_without_a_repository_the_window_is_credited_and_said_so():
    b = StepBuilder(None, roots=[T])
    out = b.consume(bash("sed -n '30,40p' pkg/mod.py", current(AFTER_INSERT, 30, 40)))
    assert out.step.spans == {"pkg/mod.py": [(30, 40)]}
    assert out.reads[0].unaligned == 11 and out.reads[0].aligned == 0


# --------------------------------------------------------------------------- the aligner


def _text(ids: list[int | None], base: list[str]) -> list[str]:
    return [base[i - 1] if i is not None else f"agent line {k}" for k, i in enumerate(ids)]


@st.composite
def edited(draw):
    """A base text with repeated lines, a current text made of it by block inserts and
    deletes, and the base line (or None) of every current line."""
    n = draw(st.integers(5, 60))
    pool = [f"unique {i}" for i in range(n)] + ["", "    return None", "}"]
    base = [draw(st.sampled_from(pool)) if draw(st.booleans()) else f"u{i}" for i in range(n)]
    ids: list[int | None] = list(range(1, n + 1))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(ids)))
        if draw(st.booleans()) and at < len(ids):
            del ids[at:at + draw(st.integers(1, 4))]
        else:
            ids[at:at] = [None] * draw(st.integers(1, 3))
    return base, ids


@settings(max_examples=300)
@given(edited(), st.data())
def test_aligned_lines_are_sound_and_in_order(case, data):
    """Whatever the edits: every credited line has the shown text, credits increase,
    and with only distinctive lines the alignment is the truth."""
    base, ids = case
    if not ids:
        return
    a = data.draw(st.integers(0, len(ids) - 1))
    z = data.draw(st.integers(a, len(ids) - 1))
    window = ids[a:z + 1]
    shown = _text(window, base)
    stale = data.draw(st.booleans())
    expect = list(range(a + 1, z + 2)) if stale else window
    text = BaseText(("\n".join(base) + "\n").encode())
    got = align(shown, text, expect)
    placed = [g for g in got if g is not None]
    assert placed == sorted(set(placed))
    for s, g in zip(shown, got):
        if g is not None:
            assert text.line(g) == s.rstrip()
    distinctive = len(set(base)) == len(base)
    if distinctive:
        assert got == window


@st.composite
def edits_and_reads(draw):
    """Block inserts/deletes of BASE (the truth: base id or None per current line), then
    windows of the edited file that reads show, in a random order."""
    ids: list[int | None] = list(range(1, len(BASE_LINES) + 1))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(ids)))
        if draw(st.booleans()) and at < len(ids):
            del ids[at:at + draw(st.integers(1, 5))]
        else:
            ids[at:at] = [None] * draw(st.integers(1, 4))
    windows = []
    for _ in range(draw(st.integers(1, 5))):
        a = draw(st.integers(1, len(ids)))
        z = draw(st.integers(a, min(len(ids), a + 15)))
        windows.append((a, ids[a - 1:z]))
    return ids, windows


@settings(max_examples=200)
@given(edits_and_reads())
def test_the_map_follows_every_window_read_since_the_edit(view, case):
    """Whatever order the reads come in, every line a read showed maps to what it
    showed, and nothing is counted twice: the map never holds a base line twice."""
    from streameval.reading.editmap import EditMap

    ids, windows = case
    m = EditMap(view)
    for a, got in windows:
        texts = [BASE_LINES[b - 1] if b is not None else "agent" for b in got]
        m.observe("pkg/mod.py", a, got, texts)
    for a, got in windows:
        assert m.base_of("pkg/mod.py", a, len(got)) == got or any(
            w[0] <= a + len(got) - 1 and w[0] + len(w[1]) - 1 >= a and w is not (a, got)
            for w in windows[windows.index((a, got)) + 1:])
    a, got = windows[-1]
    assert m.base_of("pkg/mod.py", a, len(got)) == got
    n = m.num_lines("pkg/mod.py")
    mapped = [b for b in m.base_of("pkg/mod.py", 1, n) if b is not None]
    assert mapped == sorted(set(mapped))


@settings(max_examples=100)
@given(st.lists(st.integers(1, len(BASE_LINES)), min_size=1, max_size=12, unique=True),
       edits_and_reads())
def test_scattered_numbers_kept_lazily_give_the_same_map(view, hits, case):
    """A grep-like read of the unedited file is remembered as printed (numbers, texts)
    and cut into windows only when a later read disagrees; the map must be the same as
    when every run is observed on its own."""
    from streameval.reading.editmap import EditMap

    hits = sorted(hits)
    texts = [BASE_LINES[n - 1] for n in hits]
    ids, windows = case
    lazy, eager = EditMap(view), EditMap(view)
    lazy.observe_numbered("pkg/mod.py", hits, list(hits), texts)
    i = 0
    while i < len(hits):
        j = i + 1
        while j < len(hits) and hits[j] == hits[j - 1] + 1:
            j += 1
        eager.observe("pkg/mod.py", hits[i], hits[i:j], texts[i:j])
        i = j
    for a, got in windows:
        shown = [BASE_LINES[b - 1] if b is not None else "agent" for b in got]
        assert lazy.observe("pkg/mod.py", a, got, shown) == \
            eager.observe("pkg/mod.py", a, got, shown)
    n = eager.num_lines("pkg/mod.py")
    assert lazy.num_lines("pkg/mod.py") == n
    assert lazy.base_of("pkg/mod.py", 1, n) == eager.base_of("pkg/mod.py", 1, n)


def test_blank_lines_a_harness_trimmed_were_not_shown(b):
    """Claude Code trims leading blank lines and trailing white space from Bash output:
    `sed -n '29,44p'` whose lines 29-30 and 43-44 are blank shows 31-42. The trimmed
    lines were printed but never shown to the agent: they credit nothing (§6d), and a
    repeated blank line at a wrong expected place does not outvote the anchors."""
    shown = current(BASE_LINES, 31, 42).rstrip()
    out = b.consume(bash("sed -n '29,44p' pkg/mod.py", shown))
    assert out.step.spans == {"pkg/mod.py": [(31, 42)]}
    assert out.reads[0].agent == 0


def test_blank_lines_a_program_printed_last_were_shown(b):
    """mini-swe-agent and Codex show the output whole: `sed -n '38,44p'` printed
    base 38-44, of which 43-44 are blank, and the output ends with them (its last
    newline ends line 44): all seven were shown."""
    out = b.consume(bash("sed -n '38,44p' pkg/mod.py", current(BASE_LINES, 38, 44)))
    assert out.step.spans == {"pkg/mod.py": [(38, 44)]}
    out = b.consume(bash("sed -n '38,44p' pkg/mod.py", current(BASE_LINES, 38, 43)))
    assert out.step.spans == {"pkg/mod.py": [(38, 43)]}   # the output ended at line 43


def test_a_leading_line_that_is_not_blank_is_not_credited(b):
    shown = current(BASE_LINES, 33, 40)            # 31-32 were not blank: not trimmed
    out = b.consume(bash("sed -n '31,40p' pkg/mod.py", shown))
    assert out.step.spans == {"pkg/mod.py": [(33, 40)]}


def test_a_blank_line_found_once_in_the_file_is_placed_past_an_agent_line():
    """Found by the property above: after the anchor ``u2``, the agent's line, then the
    file's only blank line. Blank lines are usually a coincidence away from the anchor;
    one that occurs once in the file is where it is."""
    base = ["u0", "u1", "u2", "", "u4"]
    text = BaseText(("\n".join(base) + "\n").encode())
    assert align(["u2", "agent line", ""], text, [1, 2, 3]) == [3, None, 4]
    # two blank lines in the file: the block stays unplaced rather than guessed
    base2 = ["u0", "", "u2", "", "u4"]
    text2 = BaseText(("\n".join(base2) + "\n").encode())
    assert align(["u2", "agent line", ""], text2, [1, 2, 3]) == [3, None, None]
