"""Gold loading (parquet, JSON, JSONL, annot dirs) and gold path normalizing (docs/metrics.md §1, §2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.errors import GoldError, Reason
from streameval.sources.gold import GoldInstance, GoldSpan, load_gold, normalize_gold_path


@pytest.mark.parametrize("raw, expected", [
    ("/workspace/cli__cli__0.1/pkg/cmd/repo/clone/clone.go", "pkg/cmd/repo/clone/clone.go"),
    ("/testbed/django/db/models/query.py", "django/db/models/query.py"),
    ("django/db/models/query.py", "django/db/models/query.py"),
    ("./src/a.py", "src/a.py"),
    ("././src/a.py", "src/a.py"),
    ("/src/a.py", "src/a.py"),
    ("src\\pkg\\a.py", "src/pkg/a.py"),
    ("\\testbed\\src\\a.py", "src/a.py"),
    (".github/workflows/ci.yml", ".github/workflows/ci.yml"),      # not "github/..."
    ("/testbed/.github/workflows/ci.yml", ".github/workflows/ci.yml"),
    ("./.size-limit.js", ".size-limit.js"),
    ("/workspace/repo/.eslintrc", ".eslintrc"),
    # only ONE directory under /workspace is dropped
    ("/workspace/a/b/c.go", "b/c.go"),
    # a file straight in /workspace has no directory to drop (docs/metrics.md §2 as written)
    ("/workspace/run_svelte_test.js", "workspace/run_svelte_test.js"),
])
def test_normalize_gold_path(raw: str, expected: str) -> None:
    assert normalize_gold_path(raw) == expected


def test_dotfile_is_not_stripped_like_the_public_evaluator() -> None:
    # Regression: stripping every leading "." would make ".github/x" and "github/x" the same file.
    assert normalize_gold_path(".github/x") != normalize_gold_path("github/x")


# --------------------------------------------------------------------------- real parquet

@pytest.fixture(scope="module")
def real_gold(gold_parquet: Path):
    return load_gold(gold_parquet)


def test_parquet_has_all_rows_and_no_errors(real_gold) -> None:
    assert len(real_gold) == 50
    assert real_gold.errors == []
    assert len({g.instance_id for g in real_gold}) == 50


def test_parquet_gold_context_is_all_init(real_gold) -> None:
    # docs/metrics.md §1: a row with only gold_context treats all of it as init_ctx.
    for inst in real_gold:
        assert inst.add_ctx == []
        assert inst.init_ctx and inst.gold_context == inst.init_ctx
    total = sum(len(g.gold_context) for g in real_gold)
    assert total > 50


def test_parquet_lookup_by_both_ids(real_gold) -> None:
    by_original = real_gold.get("cli__cli-5973")
    by_id = real_gold.get("Multi-SWE-Bench__go__maintenance__bugfix__2fea5f6b")
    assert by_original is by_id is not None
    assert by_id.repo == "cli"
    assert by_id.language == "go"
    assert by_id.base_commit == "954689ea9f26e3131ca816285eee8930cd8aa835"
    assert by_id.patch and by_id.patch.startswith("diff --git")
    assert by_id.init_ctx[0] == GoldSpan("pkg/cmd/repo/clone/clone.go", 1, 180)
    assert real_gold.get("no-such-instance") is None
    assert "cli__cli-5973" in real_gold


def test_parquet_paths_are_normalized(real_gold) -> None:
    files = {s.file for g in real_gold for s in g.gold_context}
    assert "pkg/cmd/repo/clone/clone.go" in files
    assert "tracing-attributes/src/lib.rs" in files
    assert "django/db/migrations/serializer.py" in files
    assert ".size-limit.js" in files     # mui__material-ui-11987 keeps its dot file
    assert not any(f.startswith(("/", "./", "workspace/cli__")) for f in files)
    assert not any("\\" in f for f in files)


def test_parquet_lines_are_ints(real_gold) -> None:
    for g in real_gold:
        for s in g.gold_context:
            assert isinstance(s.start_line, int) and isinstance(s.end_line, int)
            assert s.start_line >= 1


# --------------------------------------------------------------------------- JSON / JSONL / annot

ITEMS = [{"file": "/testbed/src/a.py", "start_line": 1, "end_line": 3, "content": "x"},
         {"path": "src/b.py", "start": "4", "end": 9}]


def _row(iid: str, **extra) -> dict:
    return {"instance_id": iid, "original_inst_id": f"{iid}-orig", "repo": "o/r",
            "base_commit": "abc", "gold_context": json.dumps(ITEMS), **extra}


def _check_row(gold, iid: str) -> None:
    inst = gold.get(iid)
    assert isinstance(inst, GoldInstance)
    assert inst.init_ctx == [GoldSpan("src/a.py", 1, 3), GoldSpan("src/b.py", 4, 9)]
    assert inst.add_ctx == []
    assert gold.get(f"{iid}-orig") is inst


def test_json_list(tmp_path: Path) -> None:
    f = tmp_path / "gold.json"
    f.write_text(json.dumps([_row("a"), _row("b")]))
    gold = load_gold(f)
    assert len(gold) == 2 and gold.errors == []
    _check_row(gold, "a")
    _check_row(gold, "b")


def test_json_single_row(tmp_path: Path) -> None:
    f = tmp_path / "one.json"
    f.write_text(json.dumps(_row("solo")))
    gold = load_gold(f)
    assert len(gold) == 1
    _check_row(gold, "solo")


def test_json_dict_of_rows_uses_keys_as_ids(tmp_path: Path) -> None:
    f = tmp_path / "map.json"
    rows = {"x1": {"gold_ctx": ITEMS}, "x2": _row("x2")}
    f.write_text(json.dumps(rows))
    gold = load_gold(f)
    assert [g.instance_id for g in gold] == ["x1", "x2"]
    assert gold.get("x1").init_ctx[1] == GoldSpan("src/b.py", 4, 9)  # gold_ctx as a list


def test_null_init_and_add_columns_fall_back_to_gold_context(tmp_path: Path) -> None:
    """docs/metrics.md §1: a row with only gold_context treats all of it as init_ctx. A table
    that has init_ctx/add_ctx columns (null in this row) still has only gold_context
    here; it was rejected as "no gold items"."""
    f = tmp_path / "mixed.json"
    rows = [{**_row("only-gold"), "init_ctx": None, "add_ctx": None},
            {"instance_id": "split", "init_ctx": ITEMS[:1], "add_ctx": None,
             "gold_context": json.dumps(ITEMS)}]
    f.write_text(json.dumps(rows))
    gold = load_gold(f)
    assert gold.errors == []
    _check_row(gold, "only-gold")
    split = gold.get("split")  # init/add given: they win over gold_context
    assert split.init_ctx == [GoldSpan("src/a.py", 1, 3)] and split.add_ctx == []


def test_jsonl_with_init_and_add(tmp_path: Path) -> None:
    f = tmp_path / "gold.jsonl"
    r1 = {"instance_id": "i1", "init_ctx": ITEMS[:1], "add_ctx": json.dumps(ITEMS[1:])}
    f.write_text(json.dumps(r1) + "\n\n" + json.dumps(_row("i2")) + "\n")
    gold = load_gold(f)
    assert gold.errors == []
    i1 = gold.get("i1")
    assert i1.init_ctx == [GoldSpan("src/a.py", 1, 3)]
    assert i1.add_ctx == [GoldSpan("src/b.py", 4, 9)]
    assert i1.gold_context == i1.init_ctx + i1.add_ctx
    _check_row(gold, "i2")


def test_jsonl_bad_line_is_reported_not_skipped(tmp_path: Path) -> None:
    f = tmp_path / "gold.jsonl"
    f.write_text(json.dumps(_row("ok")) + "\n{not json\n")
    gold = load_gold(f)
    assert len(gold) == 1
    assert len(gold.errors) == 1
    eid, msg = gold.errors[0]
    assert eid == "gold.jsonl:2" and "not valid JSON" in msg


def test_annot_dir(tmp_path: Path) -> None:
    (tmp_path / "django__django-1").mkdir()
    (tmp_path / "django__django-1" / "annot.json").write_text(json.dumps(
        {"init_ctx": ITEMS[:1], "add_ctx": ITEMS[1:], "commit": "c0ffee",
         "repo_url": "https://github.com/django/django.git"}))
    (tmp_path / "deep" / "with_id").mkdir(parents=True)
    (tmp_path / "deep" / "with_id" / "annot.json").write_text(json.dumps(
        {"inst_id": "named-in-file", "gold_ctx": ITEMS}))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "annot.json").write_text("{")
    (tmp_path / "unrelated.json").write_text("[]")
    gold = load_gold(tmp_path)
    assert len(gold) == 2
    d = gold.get("django__django-1")   # id from the directory name
    assert d.base_commit == "c0ffee" and d.repo == "django/django"
    assert d.add_ctx == [GoldSpan("src/b.py", 4, 9)]
    assert gold.get("named-in-file").init_ctx[0].file == "src/a.py"
    assert [e[0] for e in gold.errors] == ["broken"]


def test_empty_annot_dir_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(GoldError, match=f"{tmp_path}.*no usable gold rows.*annot.json"):
        load_gold(tmp_path)


@pytest.mark.parametrize("row", [
    {"instance_id": "empty-list", "gold_context": "[]"},
    {"instance_id": "empty-str", "gold_context": ""},
    {"instance_id": "none", "gold_context": None},
    {"instance_id": "null-str", "gold_context": "null"},
    {"instance_id": "empty-init", "init_ctx": [], "add_ctx": None},
])
def test_empty_gold_rows_are_scored(tmp_path: Path, row: dict) -> None:
    """The evaluator reads an empty gold context as an empty G (coverage 1.0): so do we."""
    f = tmp_path / "gold.json"
    f.write_text(json.dumps([row]))
    inst = load_gold(f).get(row["instance_id"])
    assert inst is not None and not inst.gold_context and not load_gold(f).errors


@pytest.mark.parametrize("name, text", [
    ("traces.jsonl", '{"type": "system", "session_id": "s"}\n{"type": "result"}\n'),
    ("table.csv", "instance_id,gold_context\nx,[]\n"),
    ("rows.json", json.dumps([{"instance_id": "a"}, {"instance_id": "b"}])),
    ("empty.jsonl", ""),
])
def test_a_gold_file_with_no_usable_rows_is_an_error_naming_it(tmp_path: Path, name, text):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(GoldError, match=f"gold file {f} has no usable gold rows"):
        load_gold(f)


# --------------------------------------------------------------------------- bad rows

@pytest.mark.parametrize("row, needle", [
    ({"instance_id": "bad-json", "gold_context": "[{oops"}, "not valid JSON"),
    ({"instance_id": "no-ctx"}, "no gold_context, init_ctx or add_ctx"),
    ({"instance_id": "float-line", "gold_context": [{"file": "a", "start_line": 1.5, "end_line": 2}]},
     "non-integer lines"),
    ({"instance_id": "text-line", "gold_context": [{"file": "a", "start_line": "one", "end_line": 2}]},
     "non-integer lines"),
    ({"instance_id": "bool-line", "gold_context": [{"file": "a", "start_line": True, "end_line": 2}]},
     "non-integer lines"),
    ({"instance_id": "missing-end", "gold_context": [{"file": "a", "start_line": 1}]},
     "non-integer lines"),
    ({"instance_id": "no-file", "gold_context": [{"start_line": 1, "end_line": 2}]}, "has no file"),
    ({"instance_id": "not-a-list", "gold_context": 7}, "not a list"),
    ({"instance_id": "item-str", "gold_context": ["a.py"]}, "not an object"),
    ({"instance_id": "bad-add", "init_ctx": ITEMS, "add_ctx": "[nope"}, "add_ctx is not valid JSON"),
])
def test_bad_rows_are_reported_with_id(tmp_path: Path, row: dict, needle: str) -> None:
    f = tmp_path / "gold.json"
    f.write_text(json.dumps([row, _row("good")]))
    gold = load_gold(f)
    assert [g.instance_id for g in gold] == ["good"]          # the good row survives
    assert gold.get(row["instance_id"]) is None                # the bad one is not half-loaded
    assert len(gold.errors) == 1
    eid, msg = gold.errors[0]
    assert eid == row["instance_id"]
    assert needle in msg
    assert gold.error_for(row["instance_id"]) == msg


def test_one_bad_item_rejects_the_whole_row(tmp_path: Path) -> None:
    f = tmp_path / "gold.json"
    items = ITEMS + [{"file": "c.py", "start_line": None, "end_line": 3}]
    f.write_text(json.dumps([{"instance_id": "partial", "gold_context": items}, _row("good")]))
    gold = load_gold(f)
    assert [g.instance_id for g in gold] == ["good"]
    assert gold.errors[0][0] == "partial" and "gold_context[2] (c.py)" in gold.errors[0][1]


def test_row_that_is_not_an_object(tmp_path: Path) -> None:
    f = tmp_path / "gold.json"
    f.write_text(json.dumps([42, _row("good")]))
    gold = load_gold(f)
    assert len(gold) == 1
    assert gold.errors == [("gold.json#1", "row is a int, not an object")]


def test_duplicate_id_is_reported_first_kept(tmp_path: Path) -> None:
    f = tmp_path / "gold.json"
    f.write_text(json.dumps([_row("dup"), _row("dup", base_commit="other")]))
    gold = load_gold(f)
    assert len(gold) == 1 and gold.get("dup").base_commit == "abc"
    assert gold.errors == [("dup", "duplicate instance_id; the first row is kept")]


def test_missing_gold_file_raises_with_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.parquet"
    with pytest.raises(GoldError, match="nope.parquet") as info:
        load_gold(missing)
    assert info.value.reason is Reason.MISSING_GOLD


def test_unreadable_json_file_raises(tmp_path: Path) -> None:
    f = tmp_path / "gold.json"
    f.write_text("[{")
    with pytest.raises(GoldError, match="not valid JSON"):
        load_gold(f)


def test_non_utf8_gold_file_raises(tmp_path: Path) -> None:
    f = tmp_path / "gold.jsonl"
    f.write_bytes(b'{"instance_id": "\xff"}\n')
    with pytest.raises(GoldError, match="not UTF-8"):
        load_gold(f)


def test_damaged_parquet_raises(tmp_path: Path) -> None:
    f = tmp_path / "gold.parquet"
    f.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(GoldError, match="parquet"):
        load_gold(f)


def test_parquet_written_here_with_init_add(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "instance_id": ["p1", "p2"],
        "init_ctx": [json.dumps(ITEMS[:1]), json.dumps(ITEMS)],
        "add_ctx": [json.dumps(ITEMS[1:]), "[]"],
        "base_commit": ["a", "b"],
    })
    f = tmp_path / "g.parquet"
    pq.write_table(table, f)
    gold = load_gold(f)
    assert gold.errors == []
    assert gold.get("p1").add_ctx == [GoldSpan("src/b.py", 4, 9)]
    assert len(gold.get("p2").init_ctx) == 2 and gold.get("p2").add_ctx == []
