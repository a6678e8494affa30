"""InstanceState: every metric, computed by hand, on a small real git repository.

Byte offsets used below (base commit), one line per row, ``[first, last]`` inclusive:

src/calc.py (83 bytes, 6 lines)          definitions
  1 ``class Calc:``               0-11     Calc  class_definition     0-56
  2 ``    def add(self, a, b):``  12-36    add   function_definition 16-56 (nested)
  3 ``        return a + b``      37-57    top   function_definition 59-81
  4 ````                          58
  5 ``def top():``                59-69
  6 ``    return 1``              70-82
src/last.py (24 bytes, no trailing newline): line 1 0-11, line 2 12-23
empty.py: 0 bytes (a read of it is the byte range [0, 0])

At HEAD (the second commit) calc.py gained a header line and src/new.py exists: the
state must use the base commit.
"""

from __future__ import annotations

import json

import pytest
from gitrepo import make_repo

from streameval.model import GRANULARITIES, Step
from streameval.scoring.state import InstanceState
from streameval.sources.gold import GoldInstance, GoldSpan
from streameval.sources.repo import GitRepo
from streameval.sources.symbols import SymbolIndex

CALC = "class Calc:\n    def add(self, a, b):\n        return a + b\n\ndef top():\n    return 1\n"

BASE_FILES = {
    "src/calc.py": CALC,
    "src/last.py": "def last():\n    return 0",
    "empty.py": "",
    "README.md": "# demo\n",
    "web/widget.js": "class Widget {\n  render() {\n    return 1;\n  }\n}\n",
    "web/shape.ts": ("interface Shape {\n  area(): number;\n}\nclass Box {\n"
                     "  size(): number {\n    return 2;\n  }\n}\n"),
    "cmd/main.go": "package main\n\ntype T struct{ X int }\n\nfunc (t T) Get() int {\n\treturn t.X\n}\n",
    "src/lib.rs": "struct S;\nimpl S {\n    fn get(&self) -> u8 {\n        1\n    }\n}\n",
    "src/Main.java": "class Main {\n    int get() {\n        return 1;\n    }\n}\n",
    "src/util.c": "struct P { int x; };\nint get(int x) {\n    return x;\n}\n",
}
HEAD_FILES = {"src/calc.py": "# header\n" + CALC, "src/new.py": "def fresh():\n    pass\n"}

CALC_PY = "src/calc.py"
PATCH = (  # deletes base line 3 of calc.py; the last context line is the blank line 4
    "diff --git a/src/calc.py b/src/calc.py\n"
    "--- a/src/calc.py\n"
    "+++ b/src/calc.py\n"
    "@@ -2,3 +2,3 @@\n"
    "     def add(self, a, b):\n"
    "-        return a + b\n"
    "+        return b + a\n"
    " \n"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("state-repo")
    base, _head = make_repo(root, BASE_FILES, HEAD_FILES)
    git_repo = GitRepo(root)
    yield git_repo.at(base)
    git_repo.close()


@pytest.fixture(scope="module")
def index():
    return SymbolIndex()


def gold(init=(), add=(), instance_id="inst") -> GoldInstance:
    return GoldInstance(instance_id, init_ctx=[GoldSpan(*g) for g in init],
                        add_ctx=[GoldSpan(*g) for g in add])


def read(path: str, *ranges: tuple[int, int]) -> Step:
    """A step that showed ``ranges`` of ``path`` (the file counts at file level too)."""
    return Step(files=(path,), spans={path: list(ranges)})


def final(rec: dict, g: str) -> tuple:
    f = rec["final"][g]
    return f["coverage"], f["precision"], f["intersection"], f["gold_size"], f["pred_size"]


# --------------------------------------------------------------------------- edge cases


def test_empty_gold_gives_full_coverage_but_the_trajectory_line_quirk(repo, index):
    state = InstanceState(gold(), repo, index)
    state.add_step(read(CALC_PY, (1, 3)))  # bytes 0-57, lines 1-3, Calc and add
    rec = state.record()
    assert final(rec, "file") == (1.0, 0.0, 0, 0, 1)
    assert final(rec, "span") == (1.0, 0.0, 0, 0, 58)
    assert final(rec, "line") == (1.0, 0.0, 0, 0, 3)
    assert final(rec, "symbol") == (1.0, 0.0, 0, 0, 2)
    assert rec["trajectory"]["steps"] == [
        {"step": 1, "coverage": {"file": 1.0, "symbol": 1.0, "span": 1.0, "line": 0.0}}]
    assert rec["trajectory"]["auc_coverage"] == {"file": 1.0, "symbol": 1.0, "span": 1.0,
                                                 "line": 0.0}


def test_empty_prediction_scores_zero_coverage_and_full_precision(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    rec = state.record()
    assert rec["num_steps"] == 0
    assert final(rec, "file") == (0.0, 1.0, 0, 1, 0)
    assert final(rec, "span") == (0.0, 1.0, 0, 21, 0)   # bytes 37-57
    assert final(rec, "line") == (0.0, 1.0, 0, 1, 0)
    assert final(rec, "symbol") == (0.0, 1.0, 0, 2, 0)  # Calc and the nested add
    assert rec["trajectory"] == {
        "steps": [],
        "auc_coverage": dict.fromkeys(GRANULARITIES, 0.0),
        "redundancy": dict.fromkeys(GRANULARITIES, 0.0),
    }
    assert state.final_context_empty


def test_ranges_past_the_end_of_a_file(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 5, 6)]), repo, index)
    state.add_step(read(CALC_PY, (5, 100)))       # bytes 59-82 (24), lines 5..100 (96)
    state.add_step(read("src/last.py", (3, 9)))   # starts past the last line: no bytes, 7 lines
    rec = state.record()
    assert final(rec, "span") == (1.0, 1.0, 24, 24, 24)
    assert final(rec, "line") == (1.0, 2 / 103, 2, 2, 103)
    assert final(rec, "file") == (1.0, 0.5, 1, 1, 2)
    assert final(rec, "symbol") == (1.0, 1.0, 1, 1, 1)  # top
    assert state.snapshot().granularities["line"].step_sum == 103


def test_file_without_trailing_newline_ends_at_its_last_byte(repo, index):
    state = InstanceState(gold(init=[("src/last.py", 2, 2)]), repo, index)
    state.add_step(read("src/last.py", (2, 50)))
    assert final(state.record(), "span") == (1.0, 1.0, 12, 12, 12)  # bytes 12-23


def test_empty_file_is_the_byte_range_0_0(repo, index):
    state = InstanceState(gold(init=[("empty.py", 1, 1)]), repo, index)
    state.add_step(read("empty.py", (1, 10)))
    rec = state.record()
    assert final(rec, "span") == (1.0, 1.0, 1, 1, 1)
    assert final(rec, "line") == (1.0, 0.1, 1, 1, 10)   # lines are not clamped
    assert final(rec, "symbol") == (1.0, 1.0, 0, 0, 0)


def test_file_only_steps_count_at_file_level_only(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)], add=[("web/widget.js", 1, 1)]),
                          repo, index)
    assert state.add_step(Step(files=(CALC_PY,)))["file"] == 0.5
    state.add_step(Step(files=(CALC_PY, "README.md")))
    rec = state.record()
    assert final(rec, "file") == (0.5, 0.5, 1, 2, 2)
    assert final(rec, "span") == (0.0, 1.0, 0, 21 + 15, 0)  # widget.js line 1 is 0-14
    assert final(rec, "line") == (0.0, 1.0, 0, 1, 0)
    assert rec["trajectory"]["auc_coverage"]["file"] == 0.5
    assert rec["trajectory"]["redundancy"]["file"] == pytest.approx(1 / 3)  # 1 - 2/3


# (path, gold line, line read, |G_symbol|, |G ∩ P|, |P|): the gold line sits inside a
# nested definition, the line read is the header of the outer one only.
LANGUAGES = [
    ("src/calc.py", 3, 1, 2, 1, 1),      # python: Calc > add
    ("web/widget.js", 3, 1, 2, 1, 1),    # javascript: Widget > render
    ("web/shape.ts", 6, 4, 2, 1, 1),     # typescript: Box > size (Shape elsewhere)
    ("cmd/main.go", 6, 3, 1, 0, 1),      # go: method Get; line 3 is type T
    ("src/lib.rs", 4, 2, 2, 1, 1),       # rust: impl S > fn get
    ("src/Main.java", 3, 1, 2, 1, 1),    # java: Main > get
    ("src/util.c", 3, 1, 1, 0, 1),       # c: get; line 1 is struct P
]


@pytest.mark.parametrize(("path", "gold_line", "line_read", "gold_size", "inter", "pred_size"),
                         LANGUAGES, ids=[row[0].rsplit(".", 1)[-1] for row in LANGUAGES])
def test_nested_definitions_are_all_symbols(repo, index, path, gold_line, line_read,
                                            gold_size, inter, pred_size):
    state = InstanceState(gold(init=[(path, gold_line, gold_line)]), repo, index)
    state.add_step(read(path, (line_read, line_read)))
    cov, prec, i, g, p = final(state.record(), "symbol")
    assert (i, g, p) == (inter, gold_size, pred_size)
    assert cov == inter / gold_size
    assert prec == inter / pred_size


def test_named_symbols_replace_those_of_the_spans(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    # lines 5-6 alone would give {top}; the names give {add} instead of it
    state.add_step(Step(files=(CALC_PY,), spans={CALC_PY: [(5, 6)]},
                        symbols={CALC_PY: ["Calc.add"], "nowhere.py": ["x"]}))
    rec = state.record()
    assert final(rec, "symbol") == (0.5, 1.0, 1, 2, 1)
    assert final(rec, "span") == (0.0, 0.0, 0, 21, 24)  # the spans still count as bytes
    # an empty mapping names nothing: symbols come from the spans again
    state.add_step(Step(files=(), spans={CALC_PY: [(1, 1)]}, symbols={}))
    assert final(state.record(), "symbol") == (1.0, 1.0, 2, 2, 2)  # + Calc


def test_without_a_symbol_index_the_symbol_level_is_empty(repo):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, None)
    state.add_step(read(CALC_PY, (1, 6)))
    rec = state.record()
    assert final(rec, "symbol") == (1.0, 1.0, 0, 0, 0)
    assert rec["trajectory"]["steps"][0]["coverage"]["symbol"] == 1.0


def test_a_path_that_resolves_by_suffix_feeds_the_step(repo, index):
    # docs/metrics.md §2: resolution happens before the state, which sees repo paths only
    path = repo.resolve("/testbed/src/calc.py")
    assert path == CALC_PY
    assert repo.resolve("/testbed/nowhere/zzz.py") is None
    state = InstanceState(gold(init=[(CALC_PY, 1, 6)]), repo, index)
    state.add_step(read(path, (1, 6)))
    rec = state.record()
    for g in GRANULARITIES:
        assert rec["final"][g]["coverage"] == 1.0
        assert rec["final"][g]["precision"] == 1.0


def test_gold_range_one_past_the_end_gives_line_coverage_n_over_n_plus_1(repo, index):
    # docs/metrics.md §4b: gold lines are not clamped to the file (calc.py has 6 lines)
    state = InstanceState(gold(init=[(CALC_PY, 1, 7)]), repo, index)
    state.add_step(read(CALC_PY, (1, 6)))
    rec = state.record()
    assert final(rec, "line") == (6 / 7, 1.0, 6, 7, 6)
    assert final(rec, "span") == (1.0, 1.0, 83, 83, 83)


def test_trajectory_line_coverage_is_zero_when_the_gold_has_no_lines(repo, index):
    # gold only in add_ctx: the line level has no gold at all
    state = InstanceState(gold(add=[(CALC_PY, 3, 3)]), repo, index)
    assert state.add_step(read(CALC_PY, (3, 3))) == {
        "file": 1.0, "symbol": 1.0, "span": 1.0, "line": 0.0}
    rec = state.record()
    assert final(rec, "line") == (1.0, 0.0, 0, 0, 1)  # the final block keeps the 1.0 rule
    assert rec["trajectory"]["auc_coverage"]["line"] == 0.0


def test_reversed_zero_and_negative_ranges(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 1, 2)]), repo, index)
    state.add_step(read(CALC_PY, (2, 1)))  # = (1, 2): bytes 0-36, lines 1-2
    rec = state.record()
    assert final(rec, "span") == (1.0, 1.0, 37, 37, 37)
    assert final(rec, "line") == (1.0, 1.0, 2, 2, 2)

    state = InstanceState(gold(init=[(CALC_PY, 1, 2)]), repo, index)
    state.add_step(read(CALC_PY, (0, 2)))    # bytes from line 1; no lines (0 is not > 0)
    state.add_step(read(CALC_PY, (-3, -1)))  # bytes of line 1 (start 1, end max(1, -1))
    rec = state.record()
    assert final(rec, "span") == (1.0, 1.0, 37, 37, 37)
    assert final(rec, "line") == (0.0, 1.0, 0, 2, 0)
    assert rec["trajectory"]["redundancy"]["span"] == pytest.approx(1 - 37 / (37 + 12))


def test_gold_file_missing_from_the_repo_counts_at_file_level(repo, index):
    state = InstanceState(gold(init=[("gone.py", 1, 5), (CALC_PY, 1, 1)]), repo, index)
    assert len(state.warnings) == 1 and "gone.py" in state.warnings[0]
    state.add_step(read("gone.py", (1, 5)))
    rec = state.record()
    assert final(rec, "file") == (0.5, 1.0, 1, 2, 1)
    assert final(rec, "span") == (0.0, 1.0, 0, 12, 0)  # calc.py line 1 only
    assert final(rec, "line") == (5 / 6, 1.0, 5, 6, 5)  # lines need no repo
    assert final(rec, "symbol") == (0.0, 1.0, 0, 1, 0)  # Calc


def test_bytes_come_from_the_base_commit_not_head(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 1, 1)]), repo, index)
    state.add_step(read(CALC_PY, (1, 1)))      # "class Calc:\n" at base, "# header\n" at HEAD
    state.add_step(read("src/new.py", (1, 2)))  # only at HEAD: a file, but no bytes
    rec = state.record()
    assert final(rec, "span") == (1.0, 1.0, 12, 12, 12)
    assert final(rec, "file") == (1.0, 0.5, 1, 1, 2)
    assert final(rec, "symbol") == (1.0, 1.0, 1, 1, 1)


# --------------------------------------------------------------------------- final context


def test_stated_final_context_replaces_the_union_for_the_final_block_only(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)], add=[("web/widget.js", 3, 3)]),
                          repo, index)
    state.add_step(read(CALC_PY, (1, 6)))
    # a path only in spans is not a predicted file (docs/metrics.md §4b)
    state.set_final_context(Step(files=("web/widget.js",), spans={CALC_PY: [(3, 3)]}))
    rec = state.record()
    assert final(rec, "file") == (0.5, 1.0, 1, 2, 1)
    assert final(rec, "span") == (0.6, 1.0, 21, 35, 21)  # widget.js line 3 is 14 bytes
    # the trajectory is still the steps': calc.py read whole, no widget.js
    assert rec["trajectory"]["steps"][0]["coverage"]["file"] == 0.5
    assert rec["trajectory"]["steps"][0]["coverage"]["span"] == 0.6
    assert state.snapshot().stated_final
    assert state.snapshot().bytes_read == 83  # what the steps read

    state.set_final_context(Step())  # the last stated context wins
    rec = state.record()
    assert final(rec, "file") == (0.0, 1.0, 0, 2, 0)
    assert state.final_context_empty
    assert rec["num_steps"] == 1


def test_unified_prediction_without_steps_is_one_step(repo, index):
    context = Step(files=(CALC_PY,), spans={CALC_PY: [(1, 3)]})
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    state.add_step(context)
    state.set_final_context(context)
    rec = state.record()
    assert rec["num_steps"] == 1
    assert rec["trajectory"]["auc_coverage"] == {g: rec["final"][g]["coverage"]
                                                 for g in GRANULARITIES}
    assert final(rec, "span") == (1.0, 21 / 58, 21, 21, 58)


# --------------------------------------------------------------------------- trajectory


def test_auc_counts_empty_steps(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    state.add_step(Step())
    state.add_step(read(CALC_PY, (3, 3)))
    state.add_step(Step())
    rec = state.record()
    assert rec["num_steps"] == 3
    assert [s["coverage"]["file"] for s in rec["trajectory"]["steps"]] == [0.0, 1.0, 1.0]
    assert [s["step"] for s in rec["trajectory"]["steps"]] == [1, 2, 3]
    for g in GRANULARITIES:
        assert rec["trajectory"]["auc_coverage"][g] == pytest.approx(2 / 3)
        assert rec["trajectory"]["redundancy"][g] == 0.0


def test_redundancy_is_one_minus_union_over_the_sum_of_steps(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    state.add_step(read(CALC_PY, (1, 3)))  # bytes 0-57 (58), lines 3, {Calc, add}
    state.add_step(read(CALC_PY, (2, 4)))  # bytes 12-58 (47), lines 3, {Calc, add}
    red = state.record()["trajectory"]["redundancy"]
    assert red["file"] == 0.5
    assert red["line"] == pytest.approx(1 - 4 / 6)
    assert red["span"] == pytest.approx(1 - 59 / 105)
    assert red["symbol"] == 0.5
    snap = state.snapshot()
    assert (snap.lines_read, snap.bytes_read) == (4, 59)
    assert snap.granularities["span"].step_sum == 105
    assert snap.num_steps == 2
    assert snap.last_step_coverage == {"file": 1.0, "symbol": 1.0, "span": 1.0, "line": 1.0}


def test_snapshot_before_any_step(repo, index):
    snap = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index).snapshot()
    assert snap.num_steps == 0 and (snap.lines_read, snap.bytes_read) == (0, 0)
    assert snap.last_step_coverage == dict.fromkeys(GRANULARITIES, 0.0)
    span = snap.granularities["span"]
    assert (span.coverage, span.precision, span.gold_size, span.auc_coverage) == (0.0, 1.0, 21, 0.0)
    assert not snap.stated_final


# --------------------------------------------------------------------------- record


def test_record_has_the_metrics_md_keys_in_order(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)], instance_id="owner__repo-1"), repo, index)
    state.add_step(read(CALC_PY, (3, 3)))
    rec = state.record()
    assert list(rec) == ["instance_id", "num_steps", "final", "trajectory"]
    assert rec["instance_id"] == "owner__repo-1"
    assert list(rec["final"]) == ["file", "symbol", "span", "line"]
    # the evaluator's five fields, then F1 (an extra field may follow, none is renamed)
    assert list(rec["final"]["span"]) == ["coverage", "precision", "intersection", "gold_size",
                                          "pred_size", "f1"]
    assert list(rec["trajectory"]) == ["steps", "auc_coverage", "redundancy"]
    assert list(rec["trajectory"]["steps"][0]) == ["step", "coverage"]
    assert list(rec["trajectory"]["steps"][0]["coverage"]) == ["file", "symbol", "span", "line"]
    json.dumps(rec)  # plain JSON


def test_editloc_only_with_a_patch(repo, index):
    state = InstanceState(gold(init=[(CALC_PY, 3, 3)]), repo, index)
    state.add_step(read(CALC_PY, (3, 3)))
    assert "editloc" not in state.record()
    assert "editloc" not in state.record(None)
    assert "editloc" not in state.record("")
    rec = state.record(PATCH)
    assert list(rec)[-1] == "editloc"
    assert rec["editloc"] == {"recall": 1.0, "precision": 1.0, "intersection": 1,
                              "gold_size": 1, "pred_size": 1}


# --------------------------------------------------------------------------- checkpoints


def test_to_dict_from_dict_round_trip(repo, index):
    g = gold(init=[(CALC_PY, 3, 3), ("gone.py", 1, 2)], add=[("web/widget.js", 3, 3)])
    state = InstanceState(g, repo, index)
    state.add_step(read(CALC_PY, (1, 3)))
    state.add_step(Step())
    state.add_step(Step(files=("web/widget.js",), spans={"web/widget.js": [(2, 2)]},
                        symbols={"web/widget.js": ["render"]}))
    state.set_final_context(read(CALC_PY, (3, 3)))

    saved = json.loads(json.dumps(state.to_dict()))  # plain JSON, no objects
    restored = InstanceState.from_dict(saved, g, repo, index)
    assert restored.to_dict() == state.to_dict()
    assert restored.record(PATCH) == state.record(PATCH)
    assert restored.snapshot() == state.snapshot()
    assert restored.warnings == state.warnings

    more = read("web/widget.js", (1, 5))
    assert restored.add_step(more) == state.add_step(more)
    assert restored.record() == state.record()
    assert restored.num_steps == 4


def test_from_dict_refuses_another_instance_or_format(repo, index):
    state = InstanceState(gold(instance_id="a"), repo, index)
    with pytest.raises(ValueError, match="instance"):
        InstanceState.from_dict(state.to_dict(), gold(instance_id="b"), repo, index)
    with pytest.raises(ValueError, match="format"):
        InstanceState.from_dict({**state.to_dict(), "format": 99}, gold(instance_id="a"),
                                repo, index)


def test_an_empty_gold_row_is_scored(repo, index):
    """An empty G: coverage 1.0 in the final block, line coverage 0.0 in the trajectory
    (the evaluator's quirk, docs/metrics.md §4), precision 0 for what was read."""
    state = InstanceState(gold(), repo, index)
    state.add_step(Step(files=(CALC_PY,), spans={CALC_PY: [(1, 2)]}))
    rec = state.record()
    assert [rec["final"][g]["coverage"] for g in GRANULARITIES] == [1.0] * 4
    assert rec["final"]["line"]["precision"] == 0.0
    assert rec["trajectory"]["steps"][0]["coverage"] == {
        "file": 1.0, "symbol": 1.0, "span": 1.0, "line": 0.0}
