"""``streameval replay`` end to end, on real git repositories and the bundled examples.

The hand-computed case (``acme__widgets-1``) is worked out in the comments of
``test_hand_computed_record``; every other test checks one promise of the command:
error records that let the batch go on, exit codes, worker/shard invariance, CSV.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fixture_paths import ROOT
from gitrepo import make_repo

from streameval.commands.main import main
from streameval.model import Step
from streameval.runs.batch import shard_of

EXAMPLES = ROOT / "examples"

NOTES = "".join(f"l{n:02d}\n" for n in range(1, 11))  # 10 lines of 4 bytes
MOD = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"  # f: bytes 0-20, g: 24-44
PATCH = """\
--- a/mod.py
+++ b/mod.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 3
--- a/notes.txt
+++ b/notes.txt
@@ -7,1 +7,1 @@
-l07
+L07
"""
GOLD_CTX = {"init_ctx": [{"file": "notes.txt", "start_line": 3, "end_line": 4},
                         {"file": "mod.py", "start_line": 1, "end_line": 2}],
            "add_ctx": [{"file": "notes.txt", "start_line": 9, "end_line": 10}]}
STEPS = [
    {"files": ["/testbed/notes.txt"], "spans": {"/testbed/notes.txt": [{"start": 1, "end": 4}]}},
    {"files": ["mod.py", "new.txt"], "spans": {"mod.py": [{"start": 5, "end": 6}]}},
    {"files": ["notes.txt"], "spans": {"notes.txt": [{"start": 3, "end": 5}]}},
]
FINAL = {"pred_files": ["notes.txt", "mod.py", "missing.txt"],
         "pred_spans": {"notes.txt": [{"start": 1, "end": 4}], "mod.py": [{"start": 1, "end": 6}]}}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A clone dir with one real repo, gold rows and predictions covering every case."""
    tmp = tmp_path_factory.mktemp("replay")
    repos = tmp / "repos"
    base, _head = make_repo(repos / "acme__widgets",
                            {"notes.txt": NOTES, "mod.py": MOD},
                            # after the base commit: other content, a new file
                            {"notes.txt": "changed\n" * 30, "new.txt": "new\n"})
    rows = [
        {"instance_id": "acme__widgets-1", "repo": "acme/widgets", "base_commit": base, **GOLD_CTX},
        {"instance_id": "acme__widgets-2", "repo": "acme/widgets", "base_commit": base, **GOLD_CTX},
        {"instance_id": "acme__widgets-3", "repo": "acme/widgets", "base_commit": base, **GOLD_CTX},
        {"instance_id": "acme__missing-1", "repo": "acme/missing", "base_commit": base, **GOLD_CTX},
        {"instance_id": "acme__widgets-4", "repo": "acme/widgets", "base_commit": "0" * 40,
         **GOLD_CTX},
    ]
    gold = tmp / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = [
        {"instance_id": "acme__widgets-1", "traj_data": {"pred_steps": STEPS, **FINAL},
         "model_patch": PATCH},
        {"instance_id": "ghost__nothing-1", "traj_data": {"pred_steps": STEPS, **FINAL}},
        {"instance_id": "acme__missing-1", "traj_data": {"pred_steps": STEPS, **FINAL}},
        {"instance_id": "acme__widgets-4", "traj_data": {"pred_steps": STEPS, **FINAL}},
        # no pred_steps: the final context is the one step (docs/metrics.md §4b); no patch
        {"instance_id": "acme__widgets-2", "traj_data": FINAL, "model_patch": ""},
        # only paths that are not repo files: nothing extracted
        {"instance_id": "acme__widgets-3",
         "traj_data": {"pred_steps": [{"files": ["nope.py"]}], "pred_files": ["new.txt"],
                       "pred_spans": {"/elsewhere/x.py": [{"start": 1, "end": 2}]}}},
    ]
    lines = [orjson.dumps(p).decode() for p in preds]
    lines.insert(3, '{"instance_id": "broken", "traj_data": ')  # unreadable line
    pred_file = tmp / "preds.jsonl"
    pred_file.write_text("\n".join(lines) + "\n")
    return {"tmp": tmp, "repos": repos, "gold": gold, "preds": pred_file}


def _replay(batch: dict[str, Path], *extra: str, out: str = "out.jsonl") -> tuple[int, list[dict]]:
    path = batch["tmp"] / out
    rc = main(["replay", str(batch["preds"]), "--gold", str(batch["gold"]),
               "--repos", str(batch["repos"]), "--out", str(path), "--quiet", *extra])
    return rc, [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _by_id(records: list[dict]) -> dict[str, dict]:
    return {r["instance_id"]: r for r in records if r.get("instance_id")}


def test_one_record_per_instance_in_input_order(batch):
    rc, records = _replay(batch)
    assert rc == 1   # error records among them: not everything was scored
    assert _replay(batch, "--allow-partial")[0] == 0
    assert [r["instance_id"] for r in records] == [
        "acme__widgets-1", "ghost__nothing-1", "acme__missing-1", None, "acme__widgets-4",
        "acme__widgets-2", "acme__widgets-3"]


def test_hand_computed_record(batch):
    rec = _by_id(_replay(batch)[1])["acme__widgets-1"]
    # Gold: files {notes.txt, mod.py}; lines (init only) notes 3-4, mod 1-2 = 4;
    # bytes notes [8,15] + [32,39] and mod [0,21] = 38; symbols {f}.
    # Stated final: files notes, mod (missing.txt dropped); lines notes 1-4 + mod 1-6 = 10;
    # bytes notes [0,15] (16) + mod [0,45] (46) = 62; symbols f, g.
    assert rec["num_steps"] == 3
    assert rec["final"]["file"] == {"coverage": 1.0, "precision": 1.0, "intersection": 2,
                                    "gold_size": 2, "pred_size": 2, "f1": 1.0}
    assert rec["final"]["line"] == {"coverage": 1.0, "precision": 0.4, "intersection": 4,
                                    "gold_size": 4, "pred_size": 10, "f1": 0.8 / 1.4}
    # F1 = 2PR/(P+R): (2 · 30/38 · 30/62) / (30/38 + 30/62) = 60/100
    assert rec["final"]["span"] == {"coverage": 30 / 38, "precision": 30 / 62,
                                    "intersection": 30, "gold_size": 38, "pred_size": 62,
                                    "f1": pytest.approx(0.6)}
    assert rec["final"]["symbol"] == {"coverage": 1.0, "precision": 0.5, "intersection": 1,
                                      "gold_size": 1, "pred_size": 2, "f1": 1.0 / 1.5}
    # Steps (paths resolved, new.txt is not a file at the base commit):
    # 1: notes 1-4   2: mod 5-6 (bytes [24,45], def g)   3: notes 3-5 (bytes [8,19]).
    steps = rec["trajectory"]["steps"]
    assert [s["coverage"]["file"] for s in steps] == [0.5, 1.0, 1.0]
    assert [s["coverage"]["line"] for s in steps] == [0.5, 0.5, 0.5]
    assert [s["coverage"]["span"] for s in steps] == [8 / 38] * 3
    assert [s["coverage"]["symbol"] for s in steps] == [0.0] * 3
    auc = rec["trajectory"]["auc_coverage"]
    assert auc["file"] == pytest.approx(2.5 / 3)
    assert auc["line"] == pytest.approx(0.5)
    assert auc["span"] == pytest.approx(8 / 38)
    assert auc["symbol"] == 0.0
    red = rec["trajectory"]["redundancy"]
    assert red["file"] == pytest.approx(1 - 2 / 3)     # 3 file mentions, 2 distinct
    assert red["line"] == pytest.approx(1 - 7 / 9)     # 4 + 2 + 3 lines, 7 distinct
    assert red["span"] == pytest.approx(1 - 42 / 50)   # 16 + 22 + 12 bytes, 42 distinct
    assert red["symbol"] == 0.0
    # EditLoc: deleted mod.py:2 (in init_ctx) and notes.txt:7 (not) -> 1/2.
    assert rec["editloc"] == {"recall": 0.5, "precision": 0.5, "intersection": 1,
                              "gold_size": 4, "pred_size": 2}


def test_no_pred_steps_makes_the_final_context_the_one_step(batch):
    rec = _by_id(_replay(batch)[1])["acme__widgets-2"]
    assert rec["num_steps"] == 1
    step = rec["trajectory"]["steps"][0]["coverage"]
    assert step["span"] == rec["final"]["span"]["coverage"] == 30 / 38
    assert rec["trajectory"]["auc_coverage"]["span"] == 30 / 38
    assert "editloc" not in rec  # an empty model_patch is no patch


def test_errors_are_records_and_the_batch_goes_on(batch):
    records = _replay(batch)[1]
    by_id = _by_id(records)
    assert by_id["ghost__nothing-1"]["error"].startswith("missing_gold:")
    assert "ghost__nothing-1" in by_id["ghost__nothing-1"]["error"]
    assert by_id["acme__missing-1"]["error"].startswith("missing_repo:")
    assert "acme__missing" in by_id["acme__missing-1"]["error"]
    assert by_id["acme__widgets-4"]["error"].startswith("missing_commit:")
    assert by_id["acme__widgets-3"] == {"instance_id": "acme__widgets-3",
                                        "error": "no_context_extracted"}
    broken = records[3]
    assert broken["instance_id"] is None
    assert broken["error"].startswith("malformed_json:")
    assert str(batch["preds"]) + ":4" in broken["error"]
    assert sum("error" not in r for r in records) == 2


def test_workers_give_the_same_output(batch):
    rc1, one = _replay(batch, "--workers", "1", out="w1.jsonl")
    rc2, two = _replay(batch, "--workers", "2", out="w2.jsonl")
    assert rc1 == rc2 == 1   # the batch holds error records
    assert (batch["tmp"] / "w1.jsonl").read_bytes() == (batch["tmp"] / "w2.jsonl").read_bytes()
    assert one == two


def test_shards_are_disjoint_and_cover_everything(batch):
    full = [orjson.dumps(r) for r in _replay(batch, out="all.jsonl")[1]]
    parts = [[orjson.dumps(r) for r in _replay(batch, "--shard", f"{k}/3", out=f"s{k}.jsonl")[1]]
             for k in range(3)]
    assert sorted(full) == sorted(line for part in parts for line in part)
    assert sum(len(p) for p in parts) == len(full)
    for k, part in enumerate(parts):
        for line in part:
            rec = orjson.loads(line)
            key = rec["instance_id"] or rec["source"]
            assert shard_of(key, 3) == k


def test_shard_function_is_sha1_mod_n():
    import hashlib

    key = "django__django-12125"
    assert shard_of(key, 7) == int(hashlib.sha1(key.encode()).hexdigest(), 16) % 7


def test_csv_has_benchkit_columns(batch):
    out = batch["tmp"] / "out.csv"
    _replay(batch, "--csv", str(out))
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    benchkit = (
        ["instance_id", "run_id", "trace"]
        + [f"contextbench_final_{g}_{m}" for g in ("file", "line", "span", "symbol")
           for m in ("coverage", "precision")]
        + [f"contextbench_traj_auc_{g}" for g in ("file", "line", "span", "symbol")]
        + [f"contextbench_traj_redundancy_{g}" for g in ("file", "line", "span", "symbol")]
        + ["contextbench_editloc_recall", "contextbench_editloc_precision", "error"])
    # Benchkit's columns come first, in its order; streameval's own follow them
    assert list(rows[0])[:len(benchkit)] == benchkit
    first = rows[0]
    assert first["instance_id"] == "acme__widgets-1"
    assert float(first["contextbench_final_line_precision"]) == 0.4
    assert float(first["contextbench_final_span_coverage"]) == 30 / 38
    assert float(first["contextbench_editloc_recall"]) == 0.5
    assert first["error"] == ""
    assert float(first["contextbench_final_line_f1"]) == pytest.approx(0.8 / 1.4)
    assert first["gold_source"] == '{"file":"gold.jsonl","kind":"dataset"}'
    ghost = rows[1]
    assert ghost["error"].startswith("missing_gold:")
    assert all(ghost[c] == "" for c in ghost if c.startswith("contextbench_"))
    # no patch: EditLoc cells empty, the rest filled
    nosteps = next(r for r in rows if r["instance_id"] == "acme__widgets-2")
    assert nosteps["contextbench_editloc_recall"] == ""
    assert nosteps["contextbench_traj_auc_file"] != ""


def test_exit_code_is_nonzero_only_when_nothing_was_evaluated(batch, tmp_path):
    only_errors = tmp_path / "bad.jsonl"
    only_errors.write_text('{"instance_id": "ghost__nothing-1", "pred_files": ["a.py"]}\nnot json\n')
    rc = main(["replay", str(only_errors), "--gold", str(batch["gold"]),
               "--repos", str(batch["repos"]), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert rc == 1
    assert len((tmp_path / "o.jsonl").read_bytes().splitlines()) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["replay", str(empty), "--gold", str(batch["gold"]),
                 "--repos", str(batch["repos"]), "--quiet",
                 "--out", str(tmp_path / "e.jsonl")]) == 1
    assert main(["replay", str(batch["preds"]), "--gold", str(tmp_path / "no-such-gold.jsonl"),
                 "--repos", str(batch["repos"]), "--quiet"]) == 2


def test_instance_option_selects_one_unified_record(batch):
    rc, records = _replay(batch, "--instance", "acme__widgets-2")
    assert rc == 1   # the unreadable line's error record
    # the unreadable line might have been that instance: its error is kept
    assert [r["instance_id"] for r in records] == [None, "acme__widgets-2"]


def test_subprocess_stdout_jsonl_and_table_on_stderr(batch):
    proc = subprocess.run(
        [sys.executable, "-m", "streameval", "replay", str(batch["preds"]),
         "--gold", str(batch["gold"]), "--repos", str(batch["repos"]), "--allow-partial"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr   # 5 of 7 not scored: allowed here
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 7
    assert "macro" in proc.stderr and "micro" in proc.stderr
    assert "instances: 7  evaluated: 2  errors: 5" in proc.stderr
    assert "\r" not in proc.stderr  # stderr is not a terminal: no progress line


def test_examples_unified_predictions_on_a_directory_repo(tmp_path):
    out = tmp_path / "ex.jsonl"
    rc = main(["replay", str(EXAMPLES / "predictions.jsonl"), "--gold",
               str(EXAMPLES / "gold.jsonl"), "--repo", str(EXAMPLES / "repo"),
               "--out", str(out), "--quiet"])
    assert rc == 0
    [rec] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert rec["instance_id"] == "example__inventory-1"
    assert rec["num_steps"] == 5
    assert rec["final"]["file"]["coverage"] == 1.0
    # gold init lines 9-19 + 32-34 = 14; predicted 9-19, 28-39 and tests 12-17 = 29
    assert (rec["final"]["line"]["intersection"], rec["final"]["line"]["pred_size"]) == (14, 29)
    # the patch deletes billing.py:17, inside init_ctx
    assert rec["editloc"] == {"recall": 1.0, "precision": 1.0, "intersection": 1,
                              "gold_size": 14, "pred_size": 1}


def test_examples_recorded_claude_run(tmp_path):
    out = tmp_path / "run.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "streameval", "replay", str(EXAMPLES / "runs"),
         "--gold", str(EXAMPLES / "gold.jsonl"), "--repo", str(EXAMPLES / "repo"),
         "--out", str(out)], capture_output=True, text=True, timeout=120)
    [rec] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert "error" not in rec, rec
    assert proc.returncode == 0
    assert rec["instance_id"] == "example__inventory-1"
    # the agent read all of billing.py (Read without limit) and the tests: every gold file
    assert rec["final"]["file"]["coverage"] == 1.0
    assert rec["final"]["line"]["coverage"] == 1.0
    assert rec["editloc"]["recall"] == 1.0  # patch.diff beside the trace
    assert "macro" in proc.stdout  # --out given: the table goes to stdout


def test_directories_skip_side_files_and_keep_order(tmp_path):
    from streameval.runs.batch import iter_trace_files

    found = [p.relative_to(EXAMPLES) for p in iter_trace_files(EXAMPLES / "runs")]
    assert found == [Path("runs/example-run-1/trace.jsonl")]  # not meta.json, not patch.diff
    for name in ("b.jsonl", "a.traj", "c.traj.json", "meta.json", "notes.txt", ".hidden.jsonl"):
        (tmp_path / name).write_text("{}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "z.json").write_text("{}\n")
    assert [p.name for p in iter_trace_files(tmp_path)] == ["a.traj", "b.jsonl", "c.traj.json",
                                                            "z.json"]


def test_undetectable_file_is_an_error_record_format_option_overrides(batch, tmp_path):
    # a pretty-printed document whose unified keys come after the detection window
    doc = {"instance_id": "acme__widgets-1", **{f"k{n}": n for n in range(20)},
           "traj_data": {"pred_steps": STEPS, **FINAL}}
    pretty = tmp_path / "late-keys.json"
    pretty.write_text(json.dumps(doc, indent=2))
    out = tmp_path / "o.jsonl"
    args = [str(pretty), "--gold", str(batch["gold"]), "--repos", str(batch["repos"]),
            "--out", str(out), "--quiet"]
    assert main(["replay", *args]) == 1
    [err] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert "could not detect the trace format" in err["error"]
    assert err["source"] == str(pretty)
    assert main(["replay", *args, "--format", "unified"]) == 0
    [rec] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert rec["final"]["line"]["pred_size"] == 10  # same numbers as the JSONL record


def test_progress_line_only_when_enabled():
    """On a terminal a redrawn line; quiet, nothing (the rest: tests/report/test_progress.py)."""
    import io

    from streameval.report.progress import Progress

    stream = io.StringIO()
    progress = Progress(2, tty=True, stream=stream)
    progress.update(0)
    progress.update(1)
    progress.close()
    assert stream.getvalue().startswith("\r")
    assert "2/2 instances (100%), 1 errors" in stream.getvalue()
    silent = io.StringIO()
    quiet = Progress(2, tty=True, quiet=True, stream=silent)
    quiet.update(0)
    quiet.close()
    assert silent.getvalue() == ""


@pytest.mark.parametrize("iid", ["acme__widgets-1", "acme__widgets-2"])
def test_unified_through_the_adapter_and_session_gives_the_same_numbers(batch, tmp_path, iid):
    """Replay's direct path and the generic adapter -> session path agree (4b included)."""
    from streameval.runs.evaluate import evaluate_trace
    from streameval.runs.resources import Resources
    from streameval.sources.gold import load_gold
    from streameval.sources.repocache import RepoCache
    from streameval.sources.symbols import SymbolIndex

    line = next(line for line in batch["preds"].read_bytes().splitlines()
                if f'"instance_id":"{iid}"'.encode() in line)
    one = tmp_path / "one.jsonl"
    one.write_bytes(line + b"\n")
    direct = _by_id(_replay(batch)[1])[iid]
    res = Resources(load_gold(batch["gold"]), RepoCache(batch["repos"]), SymbolIndex())
    [via_session] = evaluate_trace(one, res, fmt="unified")
    for key in ("num_steps", "final", "trajectory", "editloc"):
        assert via_session.get(key) == direct.get(key), key


def test_trace_shard_key_is_the_meta_instance_else_the_path(tmp_path):
    from streameval.runs.batch import TraceJob, collect_jobs

    [job] = list(collect_jobs([str(EXAMPLES / "runs")]))
    assert isinstance(job, TraceJob) and job.fmt == "claude"
    assert job.key == "example__inventory-1"  # from meta.json
    bare = tmp_path / "runs" / "r1" / "trace.jsonl"
    bare.parent.mkdir(parents=True)
    bare.write_bytes((EXAMPLES / "runs" / "example-run-1" / "trace.jsonl").read_bytes())
    [job] = list(collect_jobs([str(bare)]))
    assert job.key == str(bare)  # no meta.json: the directory name would bunch shards
    [job] = list(collect_jobs([str(bare)], instance="example__inventory-1"))
    assert job.key == "example__inventory-1"


def test_a_symbol_map_that_names_nothing_falls_back_to_the_spans(tmp_path):
    """docs/metrics.md §4b: a step's ``symbols`` names replace its spans' symbols, but a
    map that names nothing gives way to the spans, as the public evaluator does (it drops
    files with no names and paths that are not repository files, then falls back).

    The step read mod.py lines 1-2 (def f, the gold). Named ``g`` in a file outside the
    repository, or ``{"mod.py": []}``, or ``{}``: the spans' symbol f counts (1/1). Named
    ``g`` in mod.py: the names win and miss (0/1).
    """
    from streameval.reading.paths import resolve_step
    from streameval.scoring.state import InstanceState
    from streameval.sources.gold import GoldInstance, GoldSpan
    from streameval.sources.repo import GitRepo
    from streameval.sources.symbols import SymbolIndex

    [base] = make_repo(tmp_path, {"mod.py": MOD})
    gold = GoldInstance("x", init_ctx=[GoldSpan("mod.py", 1, 2)])
    with GitRepo(tmp_path) as repo:
        view = repo.at(base)

        def symbol_coverage(symbols):
            step = resolve_step(view, Step(files=("mod.py",), spans={"mod.py": [(1, 2)]},
                                           symbols=symbols), {})
            return InstanceState(gold, view, SymbolIndex()).add_step(step)["symbol"]

        assert symbol_coverage({"/elsewhere/nope.py": ["g"]}) == 1.0
        assert symbol_coverage({"mod.py": []}) == 1.0
        assert symbol_coverage({}) == 1.0
        assert symbol_coverage({"mod.py": ["g"]}) == 0.0
        assert symbol_coverage({"mod.py": ["f"], "nope.py": []}) == 1.0


def test_unified_final_context_is_only_what_the_record_states(batch):
    """docs/metrics.md §4b, as the public evaluator: the final context is ``pred_files``/
    ``pred_spans``/``pred_symbols``. Steps with no stated final context, or a final
    context of symbol names only, are ``no_context_extracted``; files alone are scored."""
    from streameval.runs.batch import BatchContext as _Context
    from streameval.runs.batch import evaluate_unified
    from streameval.traces.formats.unified import parse_record

    context = _Context.build(str(batch["gold"]), str(batch["repos"]), None)
    try:
        def run(traj: dict) -> dict:
            return evaluate_unified(parse_record({"instance_id": "acme__widgets-1",
                                                  "traj_data": traj}), context)
        assert run({"pred_steps": STEPS})["error"] == "no_context_extracted"
        assert run({"pred_steps": STEPS, "pred_symbols": {"mod.py": ["f"]}})["error"] \
            == "no_context_extracted"
        files_only = run({"pred_steps": STEPS, "pred_files": ["mod.py"]})
        assert files_only["num_steps"] == 3
        assert files_only["final"]["file"] == {"coverage": 0.5, "precision": 1.0,
                                               "intersection": 1, "gold_size": 2,
                                               "pred_size": 1, "f1": 2 * 0.5 / 1.5}
    finally:
        context.repos.close()


def test_read_head_keeps_a_long_first_line_whole_for_detection(tmp_path):
    from streameval.traces.files import read_head
    from streameval.traces.formats import detect_format

    # one OpenHands instance per line; a real one runs to megabytes of history
    big = {"instance_id": "o__r-1", "history": [{"content": "x" * (2 << 20)}], "metadata": {}}
    p = tmp_path / "output.jsonl"
    p.write_bytes(b"\n" + orjson.dumps(big) + b"\r\n" + b"{}\n" * 20)
    head = read_head(p, n=3)
    assert len(head) == 3 and head[0] == orjson.dumps(big) and head[1:] == [b"{}", b"{}"]
    assert detect_format(head) == "openhands"


def test_records_echo_the_input_id_and_name_the_gold_row(batch, tmp_path):
    """docs/metrics.md §5: ``instance_id`` is the prediction's own id (as the public
    evaluator echoes it); the gold row's id follows as ``gold_instance_id`` when the
    prediction named the row by its ``original_inst_id``. The CSV says the same."""
    base = json.loads(batch["gold"].read_text().splitlines()[0])["base_commit"]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"instance_id": "Multi-SWE-Bench__py__acme__1",
                                "original_inst_id": "acme__widgets-9", "repo": "acme/widgets",
                                "base_commit": base, **GOLD_CTX}) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(orjson.dumps({"instance_id": iid, "traj_data": FINAL}).decode()
                             + "\n" for iid in ("acme__widgets-9",
                                                "Multi-SWE-Bench__py__acme__1", "acme__nope-1")))
    out, table = tmp_path / "out.jsonl", tmp_path / "out.csv"
    assert main(["replay", str(preds), "--gold", str(gold), "--repos", str(batch["repos"]),
                 "--out", str(out), "--csv", str(table), "--quiet"]) == 1   # acme__nope-1
    by_original, by_long, missing = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert by_original["instance_id"] == "acme__widgets-9"
    assert by_original["gold_instance_id"] == "Multi-SWE-Bench__py__acme__1"
    assert list(by_original)[:2] == ["instance_id", "gold_instance_id"]
    assert by_long["instance_id"] == "Multi-SWE-Bench__py__acme__1"
    assert "gold_instance_id" not in by_long
    assert by_original["final"] == by_long["final"]
    assert missing["instance_id"] == "acme__nope-1" and "missing_gold" in missing["error"]
    with table.open(newline="") as fh:
        ids = [row["instance_id"] for row in csv.DictReader(fh)]
    assert ids == ["acme__widgets-9", "Multi-SWE-Bench__py__acme__1", "acme__nope-1"]
