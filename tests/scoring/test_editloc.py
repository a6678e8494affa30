"""editloc.py: deleted lines of a unified diff and EditLoc against init_ctx (docs/metrics.md §4)."""

from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.scoring.editloc import deleted_lines, editloc
from streameval.sources.gold import GoldInstance, GoldSpan, load_gold, normalize_gold_path

KEYS = ["recall", "precision", "intersection", "gold_size", "pred_size"]


def gold(*spans: tuple[str, int, int], add: tuple[tuple[str, int, int], ...] = ()) -> GoldInstance:
    return GoldInstance("inst-1", init_ctx=[GoldSpan(*s) for s in spans],
                        add_ctx=[GoldSpan(*s) for s in add])


def header(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"


SIMPLE = header("src/m.py") + """@@ -10,5 +10,5 @@ def f():
 ctx10
 ctx11
-old12
+new12
 ctx13
 ctx14
"""


def test_simple_modification() -> None:
    assert deleted_lines(SIMPLE) == {"src/m.py": [12]}
    result = editloc(SIMPLE, gold(("src/m.py", 11, 13)))
    assert list(result) == KEYS
    assert result == {"recall": 1.0, "precision": 1.0, "intersection": 1,
                      "gold_size": 3, "pred_size": 1}


def test_modification_outside_gold_is_a_miss() -> None:
    assert editloc(SIMPLE, gold(("src/m.py", 13, 20), ("src/other.py", 12, 12))) == {
        "recall": 0.0, "precision": 0.0, "intersection": 0, "gold_size": 9, "pred_size": 1}


def test_deletion_run_ending_at_hunk_end() -> None:
    patch = header("m.py") + "@@ -20,4 +20,2 @@\n c20\n c21\n-d22\n-d23\n"
    assert deleted_lines(patch) == {"m.py": [22, 23]}
    assert editloc(patch, gold(("m.py", 23, 30))) == {
        "recall": 0.5, "precision": 0.5, "intersection": 1, "gold_size": 8, "pred_size": 2}


def test_deletion_followed_by_context_and_additions_in_between() -> None:
    # old: a1 d2 d3 c4 d5 c6 (6 lines); new: a1 n c4 c6 (4 lines)
    patch = header("m.py") + "@@ -1,6 +1,4 @@\n a1\n-d2\n-d3\n+n\n c4\n-d5\n c6\n"
    assert deleted_lines(patch) == {"m.py": [2, 3, 5]}
    assert editloc(patch, gold(("m.py", 3, 4))) == {
        "recall": 1 / 3, "precision": 1 / 3, "intersection": 1, "gold_size": 2, "pred_size": 3}


def test_additions_interleaved_do_not_advance_old_lines() -> None:
    # old: a5 a6 c7 (3 lines); new: x y z c7 (4 lines)
    patch = header("m.py") + "@@ -5,3 +5,4 @@\n-a5\n+x\n+y\n-a6\n+z\n c7\n"
    assert deleted_lines(patch) == {"m.py": [5, 6]}


def test_add_only_patch_scores_zero() -> None:
    patch = header("m.py") + "@@ -3,2 +3,3 @@\n c3\n+added\n c4\n"
    assert deleted_lines(patch) == {"m.py": []}
    assert editloc(patch, gold(("m.py", 1, 10))) == {
        "recall": 0.0, "precision": 0.0, "intersection": 0, "gold_size": 10, "pred_size": 0}


def test_several_files_and_gold_union() -> None:
    patch = (header("a.py") + "@@ -4,3 +4,2 @@\n c4\n-d5\n c6\n"
             + header("b.py") + "@@ -6,4 +6,2 @@\n c6\n-d7\n-d8\n c9\n")
    assert deleted_lines(patch) == {"a.py": [5], "b.py": [7, 8]}
    g = gold(("a.py", 1, 10), ("a.py", 5, 12), ("a.py", 20, 15),  # union 1..12, 15..20
             ("b.py", 8, 8), ("c.py", 1, 2), ("c.py", 0, 0), ("c.py", -3, 1),
             add=(("a.py", 100, 200),))  # add_ctx is not EditLoc gold
    # gold_size: a 12 + 6, b 1, c 2 (ranges with an end <= 0 are dropped, docs/metrics.md §3/4b)
    assert editloc(patch, g) == {"recall": 2 / 3, "precision": 2 / 3, "intersection": 2,
                                 "gold_size": 21, "pred_size": 3}


def test_deleted_file_uses_the_old_name() -> None:
    patch = ("diff --git a/old.py b/old.py\ndeleted file mode 100644\nindex abc1234..0000000\n"
             "--- a/old.py\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-l1\n-l2\n-l3\n")
    assert deleted_lines(patch) == {"old.py": [1, 2, 3]}
    assert editloc(patch, gold(("old.py", 2, 2))) == {
        "recall": 1 / 3, "precision": 1 / 3, "intersection": 1, "gold_size": 1, "pred_size": 3}


def test_new_file_has_no_deleted_lines() -> None:
    patch = ("diff --git a/new.py b/new.py\nnew file mode 100644\nindex 0000000..abc1234\n"
             "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x\n+y\n")
    assert deleted_lines(patch) == {"new.py": []}


@pytest.mark.parametrize("patch", [None, "", "   ", "\n\t \r\n"])
def test_no_patch_gives_no_editloc(patch: str | None) -> None:
    g = GoldInstance("inst-1", init_ctx=[GoldSpan("m.py", 1, 3)], patch=SIMPLE)
    assert editloc(patch, g) is None  # never the gold patch in its place


def test_hunks_with_omitted_counts() -> None:
    patch = (header("m.py")
             + "@@ -7 +7 @@\n-old7\n+new7\n"        # both counts omitted: 1 and 1
             + "@@ -9,0 +10 @@\n+inserted\n"         # pure insertion after line 9
             + "@@ -15 +16,2 @@ def g():\n-a15\n+b\n+c\n"
             + "@@ -20,2 +22 @@\n-a20\n c21\n")
    assert deleted_lines(patch) == {"m.py": [7, 15, 20]}


@pytest.mark.parametrize(("new_header", "expected"), [
    ("+++ b/./src/m.py", "src/m.py"),
    ("+++ /testbed/src/m.py", "src/m.py"),
    ("+++ b/src\\m.py", "src/m.py"),
])
def test_patch_paths_get_the_gold_normalization(new_header: str, expected: str) -> None:
    patch = f"--- a/src/m.py\n{new_header}\n@@ -2,2 +2,2 @@\n-x\n+y\n c\n"
    assert editloc(patch, gold((expected, 2, 2)))["intersection"] == 1


def test_crlf_garbage_and_prose_around_the_diff() -> None:
    patch = ("Here is my fix:\r\n\r\n```diff\r\n" + SIMPLE.replace("\n", "\r\n")
             + "```\r\nDone. @@ not a hunk\r\n-not a deletion\r\n")
    assert deleted_lines(patch) == {"src/m.py": [12]}


def test_diff_git_without_hunks() -> None:
    patch = ("diff --git a/logo.png b/logo.png\nindex 1..2 100644\n"
             "Binary files a/logo.png and b/logo.png differ\n"
             "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
             "diff --git a/x.py b/y.py\nsimilarity index 100%\nrename from x.py\nrename to y.py\n"
             + SIMPLE)
    assert deleted_lines(patch) == {"src/m.py": [12]}
    assert deleted_lines("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n") == {}


def test_paths_with_spaces_and_quoted_paths() -> None:
    # What git really prints: a tab after names with spaces, C quotes for non-ASCII.
    patch = ('diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\nindex 1..2 100644\n'
             '--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n@@ -1 +1 @@\n-x\n+y\n'
             "diff --git a/my dir/a file.py b/my dir/a file.py\nindex 1..2 100644\n"
             "--- a/my dir/a file.py\t\n+++ b/my dir/a file.py\t\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
    assert deleted_lines(patch) == {"café.py": [1], "my dir/a file.py": [2]}


def test_gnu_diff_headers_with_timestamps() -> None:
    patch = ("--- m.py\t2024-01-01 10:00:00.000000000 +0000\n"
             "+++ m.py\t2024-01-02 10:00:00.000000000 +0000\n@@ -3,2 +3,1 @@\n-gone\n kept\n")
    assert deleted_lines(patch) == {"m.py": [3]}


def test_deleted_lines_that_look_like_headers_stay_in_their_hunk() -> None:
    # Deleting the SQL comment "-- a" and the line "++ b" gives "--- a" and "-++ b".
    patch = header("q.sql") + "@@ -1,3 +1,1 @@\n--- a\n-++ b\n keep\n"
    assert deleted_lines(patch) == {"q.sql": [1, 2]}


def test_no_newline_marker_and_several_hunks_in_one_file() -> None:
    patch = (header("m.py") + "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n"
             "\\ No newline at end of file\n@@ -40,3 +40,3 @@\n c\n-d41\n+D\n c\n")
    assert deleted_lines(patch) == {"m.py": [2, 41]}


def test_blank_context_lines_stripped_by_editors_still_count() -> None:
    patch = header("m.py") + "@@ -1,4 +1,3 @@\n a\n\n-c3\n d\n"
    assert deleted_lines(patch) == {"m.py": [3]}


def test_truncated_hunk_and_same_file_twice() -> None:
    patch = (header("m.py") + "@@ -1,10 +1,10 @@\n a\n-b2\n"  # cut short
             + header("m.py") + "@@ -5,2 +5,1 @@\n-e5\n f\n")
    assert deleted_lines(patch) == {"m.py": [2, 5]}


def test_garbage_is_not_a_diff() -> None:
    assert deleted_lines("") == {}
    assert deleted_lines("@@ -1,2 +1,2 @@\n-a\n+b\n") == {}  # no file header
    assert deleted_lines("--- a/m.py\n@@ -1 +1 @@\n-x\n+y\n") == {}  # no +++
    assert deleted_lines("\x00\xff random \u2028 text\n@@ -x,y @@\n") == {}
    assert editloc("just words, no diff", gold(("m.py", 1, 2))) == {
        "recall": 0.0, "precision": 0.0, "intersection": 0, "gold_size": 2, "pred_size": 0}


def test_form_feed_inside_a_line_is_not_a_line_break() -> None:
    patch = header("m.c") + "@@ -1,3 +1,2 @@\n a\n-\x0c b\n c\n"
    assert deleted_lines(patch) == {"m.c": [2]}


# ----------------------------------------------------------------- real data


def numstat(patch: str) -> dict[str, int]:
    """Deleted lines per file according to git itself (``git apply --numstat``).

    The shipped gold patches were stripped of trailing white space, which cut the blank
    context lines closing their last hunk; git rejects such a hunk, so blank context is
    put back (at most 3 lines) until git reads the patch.
    """
    patch = patch if patch.endswith("\n") else patch + "\n"
    for pad in range(4):
        run = subprocess.run(["git", "apply", "--numstat", "-"],
                             input=(patch + " \n" * pad).encode(), capture_output=True,
                             cwd="/")
        if run.returncode == 0:
            break
    assert run.returncode == 0, run.stderr.decode()
    counts: dict[str, int] = {}
    for row in run.stdout.decode().splitlines():
        _added, deleted, path = row.split("\t", 2)
        counts[path] = counts.get(path, 0) + (0 if deleted == "-" else int(deleted))
    return counts


def test_gold_patches_agree_with_git_numstat(gold_parquet: Path) -> None:
    instances = list(load_gold(gold_parquet))
    assert len(instances) == 50
    checked = 0
    for inst in instances:
        if not inst.patch:
            continue
        ours = {p: len(lines) for p, lines in deleted_lines(inst.patch).items()}
        git_counts = {p: n for p, n in numstat(inst.patch).items() if p in ours or n}
        assert ours == git_counts, inst.instance_id
        result = editloc(inst.patch, inst)
        assert list(result) == KEYS
        assert result["pred_size"] == sum(ours.values())
        assert 0 <= result["intersection"] <= result["pred_size"]
        checked += 1
    assert checked == 50


# In this row the gold content of client/utils.js is 11 lines off the patch's own base
# (line 153 of the content is line 142 of the patch): the data disagree, not the parser.
CONTENT_OFF_PATCH = {"Multi-SWE-Bench__javascript__maintenance__bugfix__2f405b15"}


def shown_lines(gold_context: str) -> dict[tuple[str, int], str]:
    """(file, line) -> text (stripped) from the ``content`` of the gold items."""
    shown = {}
    for item in json.loads(gold_context):
        path = normalize_gold_path(item["file"])
        for row in item.get("content", "").split("\n"):
            num, _, text = row.partition("\t")  # content rows are "<line>\t<text>"
            if num.isdigit():
                shown[(path, int(num))] = text.strip()
    return shown


def minus_texts(patch: str) -> dict[str, list[str]]:
    """The text of each '-' line per file, in patch order (simple scan; real data only)."""
    texts: dict[str, list[str]] = {}
    current = None
    for line in patch.split("\n"):
        if line.startswith("+++ "):
            current = line[len("+++ b/"):]
        elif line.startswith("-") and not line.startswith("--- ") and current:
            texts.setdefault(current, []).append(line[1:].strip())
    return texts


def test_deleted_line_numbers_name_the_deleted_text(gold_parquet: Path) -> None:
    # Each deleted line number must point at the same text in the gold's own copy of the
    # base file: an off-by-one in hunk walking would fail nearly every comparison.
    import pyarrow.parquet as pq

    same = 0
    for row in pq.read_table(gold_parquet).to_pylist():
        shown = shown_lines(row["gold_context"])
        texts = minus_texts(row["patch"])
        for path, nums in deleted_lines(row["patch"]).items():
            assert len(nums) == len(texts.get(path, [])), (row["instance_id"], path)
            for num, text in zip(nums, texts.get(path, []), strict=True):
                if (path, num) not in shown:
                    continue
                if row["instance_id"] in CONTENT_OFF_PATCH:
                    continue
                assert shown[(path, num)] == text, (row["instance_id"], path, num)
                same += 1
    assert same >= 50


# ----------------------------------------------------------------- property: difflib round trip

lines_st = st.lists(st.sampled_from(["a", "b", "c", "", "-x", "--- y", "+z", "\\ q"]),
                    max_size=25)


@settings(max_examples=300, deadline=None)
@given(old=lines_st, new=lines_st, context=st.integers(0, 3))
def test_difflib_patches_delete_what_the_matcher_deleted(old: list[str], new: list[str],
                                                         context: int) -> None:
    # The provisional patch of a live run is made by difflib (reading/editmap.py); every
    # old line outside an "equal" block is a deleted line, whatever its text looks like.
    patch = "".join(difflib.unified_diff([s + "\n" for s in old], [s + "\n" for s in new],
                                         "a/f.py", "b/f.py", n=context))
    matcher = difflib.SequenceMatcher(None, old, new)
    expected = sorted(i + 1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"
                      for i in range(i1, i2))
    got = deleted_lines(patch)
    assert got.get("f.py", []) == expected
    assert set(got) <= {"f.py"}


@pytest.mark.parametrize("plus, at", [
    ("+++\tb/x.py", "@@ -1,2 +1,1 @@"),
    ("+++  b/x.py", "@@  -1,2  +1,1  @@"),
    ("+++\x0bb/x.py", "@@\t-1,2\t+1,1\t@@"),
    ("+++\x0cb/x.py", "@@ -1,2 +1,1 @@ def f():"),
])
def test_headers_with_any_white_space(plus: str, at: str) -> None:
    """The evaluator matches ``+++\\s+b/`` and ``@@\\s+-…\\s+@@``: any white space."""
    patch = f"--- a/x.py\n{plus}\n{at}\n-gone\n kept\n"
    assert deleted_lines(patch) == {"x.py": [1]}
    assert editloc(patch, gold(("x.py", 1, 1)))["intersection"] == 1
