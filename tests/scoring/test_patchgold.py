"""Gold from a reference patch (docs/metrics.md §1b): the rule by hand, and through replay."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from streameval.commands.main import main
from streameval.scoring.patchgold import PatchGoldError, changed_base_lines, gold_from_patch
from streameval.sources.gold import GoldSpan

EX = Path(__file__).resolve().parents[2] / "examples"
PATCH = (EX / "runs" / "example-run-1" / "patch.diff").read_text()


def test_changed_lines_of_the_example_patch_by_hand():
    # billing.py: line 17 replaced; test_billing.py: four lines added after line 19
    assert changed_base_lines(PATCH) == {"inventory/billing.py": [(17, 17)],
                                         "tests/test_billing.py": [(19, 19)]}


def test_deletions_insertions_at_the_top_new_and_deleted_files():
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,0 +1,2 @@\n+import os\n+import re\n"
        "@@ -10,4 +12,3 @@\n ctx\n-gone1\n-gone2\n+new\n ctx\n"
        "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,1 @@\n+x = 1\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n")
    # an insertion after line 1 marks line 1; lines 11-12 deleted (one replaced);
    # the new file has no base line; the deleted file's two lines are gold
    assert changed_base_lines(patch) == {"m.py": [(1, 1), (11, 12)], "old.py": [(1, 2)]}
    top = "--- a/m.py\n+++ b/m.py\n@@ -0,0 +1,1 @@\n+# header\n"
    assert changed_base_lines(top) == {"m.py": [(1, 1)]}


def test_context_widens_and_stops_at_the_ends_of_the_file():
    patch = "--- a/m.py\n+++ b/m.py\n@@ -2,1 +2,1 @@\n-a\n+b\n@@ -9,1 +9,1 @@\n-c\n+d\n"
    gold = gold_from_patch("i", patch, 3, line_count=lambda path: 10)
    # 2 -> 1..5 (not 0 or below), 9 -> 6..10 (not past line 10); touching runs merge
    assert gold.init_ctx == [GoldSpan("m.py", 1, 10)]
    assert gold.add_ctx == [] and gold.source == "patch" and gold.patch_context == 3
    unbounded = gold_from_patch("i", patch, 3)   # no repository at hand: not bounded
    assert unbounded.init_ctx == [GoldSpan("m.py", 1, 12)]


def test_a_patch_that_only_creates_files_gives_no_gold():
    with pytest.raises(PatchGoldError, match="changes no line"):
        gold_from_patch("i", "--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(PatchGoldError):
        gold_from_patch("i", "not a diff at all")


def write_patches(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def replay(tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / "out.jsonl"
    code = main(["replay", str(EX / "runs"), "--repo", str(EX / "repo"), "--out", str(out),
                 "--quiet", *extra])
    assert code in (0, 1)
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def test_replay_with_gold_from_patch(tmp_path):
    patches = write_patches(tmp_path / "ref.jsonl", [
        {"instance_id": "example__inventory-1", "patch": PATCH, "repo": "example/inventory"}])
    [rec] = replay(tmp_path, "--gold-from-patch", str(patches), "--patch-context", "2")
    assert rec["gold_source"] == {"kind": "patch", "file": "ref.jsonl", "context": 2}
    # gold: billing.py 15-19, test_billing.py 17-21 (init_ctx: the line level uses both)
    assert rec["final"]["line"]["gold_size"] == 10
    assert rec["final"]["file"]["gold_size"] == 2
    # the run's own patch changes line 17, inside the gold: EditLoc 1 of 1 deleted line
    assert rec["editloc"]["recall"] == 1.0
    with_dataset = replay(tmp_path, "--gold", str(EX / "gold.jsonl"), "--gold-from-patch",
                          str(patches))
    # --gold names the instance: its rows win
    assert with_dataset[0]["gold_source"] == {"kind": "dataset", "file": "gold.jsonl"}


def test_a_patch_row_that_gives_no_gold_is_a_bad_gold_record(tmp_path):
    patches = write_patches(tmp_path / "ref.jsonl", [
        {"instance_id": "example__inventory-1", "patch": "--- /dev/null\n+++ b/n.py\n"
                                                       "@@ -0,0 +1 @@\n+x\n"}])
    [rec] = replay(tmp_path, "--gold-from-patch", str(patches))
    assert rec["error"].startswith("bad_gold: the reference patch changes no line")


def test_gold_from_patch_reads_parquet_and_needs_a_repository(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"instance_id": ["example__inventory-1", "x__y-1"],
                      "patch": [PATCH, ""], "repo": ["example/inventory", None]})
    pq.write_table(table, tmp_path / "ref.parquet")
    [rec] = replay(tmp_path, "--gold-from-patch", str(tmp_path / "ref.parquet"))
    assert rec["gold_source"] == {"kind": "patch", "file": "ref.parquet", "context": 0}
    assert rec["final"]["line"]["gold_size"] == 2
    # gold needs a repository; without any gold, a run is scored on its gold-free signals
    assert main(["replay", str(EX / "runs"), "--gold-from-patch", str(tmp_path / "ref.parquet")]) == 2
    assert "give --repos DIR and/or --repo DIR" in capsys.readouterr().err
    assert main(["replay", str(EX / "runs"), "--out", str(tmp_path / "free.jsonl")]) == 0
    [free] = [json.loads(line) for line in (tmp_path / "free.jsonl").read_text().splitlines()]
    assert free["gold_missing"].startswith("no_gold: no --gold") and free["final"] is None
