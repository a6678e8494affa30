"""The mistakes a new user makes, each a one-line error or a flagged record, and an exit
code that says whether everything was scored (docs/metrics.md §5b, docs/replay.md "Exit
codes"). Every case ran silently before: a wrong ``--repo`` scored symbol and span
coverage 1.0, a cut trace scored coverage 0.0 and precision 1.0, and both exited 0.

Through ``streameval replay`` on git repositories the tests create and on real traces
(``tests/fixtures/real``), and through the watcher where a file still being written
must not be called cut.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, WORKSPACE, Claude, append, bash, make_setup, started
from gitrepo import gold_stub, make_repo

from streameval.commands.main import main
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.sources.gold import load_gold

XARRAY = "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__pydata__xarray-4075.traj.json"


def replay(tmp_path: Path, *args: str) -> tuple[int, list[dict]]:
    """``streameval replay ARGS --out``: the exit code and the records."""
    out = tmp_path / "out.jsonl"
    out.unlink(missing_ok=True)
    rc = main(["replay", *args, "--out", str(out), "--quiet"])
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()] if out.exists() else []
    return rc, records




def read_abs(c: Claude, path: str, text: str) -> list[bytes]:
    """A Read of an absolute path (outside the workspace too)."""
    lines = c.read("x", text, 1, 5)
    use = json.loads(lines[0])
    use["message"]["content"][0]["input"]["file_path"] = path
    return [json.dumps(use).encode(), lines[1]]


def run_dir(root: Path, instance: str = "demo__demo-1", name: str = "r1") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": name}))
    return d


def gold_row(path: Path, sha: str, repo: str = "demo/demo") -> Path:
    path.write_text(json.dumps({
        "instance_id": "demo__demo-1", "repo": repo, "base_commit": sha,
        "init_ctx": [{"file": "src/app.py", "start_line": 4, "end_line": 9}],
        "add_ctx": [{"file": "src/util.py", "start_line": 1, "end_line": 5}]}) + "\n")
    return path


def reading_run(d: Path) -> Path:
    c = Claude()
    trace = d / "trace.jsonl"
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    return trace


# --------------------------------------------------------------------------- the repository


def test_repo_given_a_folder_of_clones_is_an_error_naming_it_a_gold_path_and_repos(tmp_path):
    """``replay --repo repos`` meant ``--repos repos``: none of the gold files is in the
    folder. Before: scored, file coverage 0.0 but symbol and span coverage 1.0, exit 0."""
    repos = tmp_path / "repos"
    sha = make_repo(repos / "demo__demo", {"src/app.py": APP, "src/util.py": UTIL})[-1]
    gold = gold_row(tmp_path / "gold.jsonl", sha)
    trace = reading_run(run_dir(tmp_path / "runs"))

    rc, [rec] = replay(tmp_path, str(trace), "--gold", str(gold), "--repo", str(repos))
    assert rc == 1 and "final" not in rec
    reason, message = rec["error"].split(": ", 1)
    assert reason == "gold_not_in_repo" and "\n" not in message
    assert str(repos.resolve()) in message and "src/app.py" in message
    assert f"pass --repos {repos}" in message

    rc, [rec] = replay(tmp_path, str(trace), "--gold", str(gold), "--repos", str(repos))
    assert rc == 0 and rec["final"]["line"]["coverage"] == 1.0
    rc, [rec] = replay(tmp_path, str(trace), "--gold", str(gold), "--repo",
                       str(repos / "demo__demo"))
    assert rc == 0 and rec["final"]["line"]["coverage"] == 1.0


def test_a_base_commit_without_the_gold_files_is_an_error_naming_the_commit(tmp_path):
    """The clone is right, the commit is not the one the gold is about (a wrong gold file,
    a fork): the error names the repository at that commit."""
    first, _second = make_repo(tmp_path / "repo", {"README.md": "hello\n"},
                               {"src/app.py": APP, "src/util.py": UTIL})
    gold = gold_row(tmp_path / "gold.jsonl", first)
    trace = reading_run(run_dir(tmp_path / "runs"))
    rc, [rec] = replay(tmp_path, str(trace), "--gold", str(gold), "--repo",
                       str(tmp_path / "repo"))
    assert rc == 1 and rec["error"].startswith("gold_not_in_repo: ")
    assert f"at {first[:12]}" in rec["error"] and "base commit" in rec["error"]


def test_the_real_run_of_the_issue_given_repo_for_repos(tmp_path, real_fixtures, gold_parquet):
    """A real mini-swe-agent run against its ContextBench gold, ``--repo`` pointing at a
    folder that holds a clone named ``pydata__xarray``."""
    repos = tmp_path / "repos"
    (repos / "pydata__xarray").mkdir(parents=True)
    trace = real_fixtures / "mini-swe-agent" / XARRAY
    rc, [rec] = replay(tmp_path, str(trace), "--gold", str(gold_parquet), "--repo", str(repos))
    assert rc == 1
    assert rec["error"].startswith("gold_not_in_repo: none of the 2 gold file(s) is in ")
    assert "xarray/core/" in rec["error"] and f"--repos {repos}" in rec["error"]


# --------------------------------------------------------------------------- cut traces


def test_a_document_cut_to_its_first_100_kb_is_an_error_and_fails_the_batch(
        tmp_path, real_fixtures, gold_parquet):
    """A ``.traj.json`` copied while the agent wrote it. Before: scored with coverage 0.0
    and precision 1.0, exit 0; only ``bad_lines: {"partial_line": 1}`` told."""
    gold = load_gold(str(gold_parquet))
    stub = gold_stub(tmp_path / "repo", gold, "pydata__xarray-4075")
    runs = tmp_path / "runs"
    runs.mkdir()
    whole = real_fixtures / "mini-swe-agent" / XARRAY
    cut = runs / "cut" / "pydata__xarray-4075.traj.json"
    cut.parent.mkdir()
    cut.write_bytes(whole.read_bytes()[:100_000])
    shutil.copyfile(whole, runs / XARRAY)
    common = ["--gold", str(gold_parquet), "--repo", str(stub)]

    rc, [rec] = replay(tmp_path, str(cut), *common)
    assert rc == 1
    assert rec["error"].startswith("truncated_trace: cut/pydata__xarray-4075.traj.json is cut "
                                   "short: document (lines 1-961) ends before")
    assert "ends before the JSON document does" in rec["error"] and "\n" not in rec["error"]

    # scored; the stub's files are empty, so its reads find none of their text there,
    # which is loud (repo_mismatch) but no cut
    rc, [rec] = replay(tmp_path, str(whole), *common, "--allow-partial")
    assert rc == 0 and rec["tool_calls"] > 0 and "truncated_trace" not in rec["problems"]

    rc, records = replay(tmp_path, str(runs), *common)
    assert rc == 1 and sorted("error" in r for r in records) == [False, True]
    rc, records = replay(tmp_path, str(runs), *common, "--allow-partial")
    assert rc == 0 and len(records) == 2


def test_the_exit_line_says_how_many_inputs_were_not_scored_and_why(tmp_path, capsys):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    good = reading_run(run_dir(runs, name="good"))
    cut = run_dir(runs, name="cut") / "trace.jsonl"
    cut.write_bytes(good.read_bytes()[:-20])
    rc = main(["replay", str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
               "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert rc == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "streameval replay: 1 of 2 input(s) could not be scored (error records: "
        "truncated_trace 1); --allow-partial to exit 0 all the same")


def test_a_jsonl_trace_whose_last_line_is_cut_is_an_error_a_whole_one_is_not(tmp_path):
    s = make_setup(tmp_path)
    d = run_dir(tmp_path / "runs")
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 5),
             c.result()]
    trace = d / "trace.jsonl"
    common = ["--gold", str(s.gold), "--repo", str(s.repo)]

    trace.write_bytes(b"\n".join(lines) + b"\n" + lines[-1][:40])  # cut mid-line
    rc, [rec] = replay(tmp_path, str(trace), *common)
    assert rc == 1 and rec["error"].startswith("truncated_trace: r1/trace.jsonl is cut short: "
                                               "line 7 ends without its newline")

    trace.write_bytes(b"\n".join(lines))               # whole, only no final newline
    rc, [rec] = replay(tmp_path, str(trace), *common)
    assert rc == 0 and rec["bad_lines"] == {} and rec["num_steps"] == 2

    trace.write_bytes(b"\n".join([lines[0], b'{"type": "assis', *lines[1:]]) + b"\n")
    rc, [rec] = replay(tmp_path, str(trace), *common)   # a bad line inside is no cut
    assert rc == 0 and rec["bad_lines"] == {"malformed_json": 1}


def test_a_real_session_cut_mid_line_is_an_error_before_anything_else(tmp_path, real_fixtures,
                                                                      gold_parquet):
    """A real Claude Code transcript copied mid-write: ``truncated_trace`` even though its
    instance has no gold row either (a cut file's identity cannot be trusted)."""
    src = real_fixtures / "claude-session" / \
        "claude-session__oneryalcin__fasthooks__sample_main_transcript.jsonl"
    data = src.read_bytes()
    cut = tmp_path / "session.jsonl"
    cut.write_bytes(data[: data.rstrip(b"\n").rindex(b"\n") + 30])
    rc, [rec] = replay(tmp_path, str(cut), "--gold", str(gold_parquet), "--repo", str(tmp_path))
    assert rc == 1 and rec["error"].startswith("truncated_trace: ")
    assert "/session.jsonl is cut short: " in rec["error"]
    whole_lines = data.rstrip(b"\n").count(b"\n") + 1
    assert f"line {whole_lines} ends without its newline" in rec["error"]


def test_a_file_of_one_run_per_line_cut_on_its_last_line_loses_that_run_only(
        tmp_path, real_fixtures, gold_parquet):
    src = real_fixtures / "openhands" / \
        "openhands__nunu0404__Python_OpenHands__multi_swe_bench-examples-output.jsonl"
    lines = src.read_bytes().rstrip(b"\n").split(b"\n")
    assert len(lines) >= 2
    whole = tmp_path / "whole" / "output.jsonl"   # both named output.jsonl in their folder
    cut = tmp_path / "cut" / "output.jsonl"
    for p in (whole, cut):
        p.parent.mkdir()
    whole.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    cut.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2])
    common = ["--gold", str(gold_parquet), "--repo", str(tmp_path)]
    _, before = replay(tmp_path, str(whole.parent), *common)
    rc, after = replay(tmp_path, str(cut.parent), *common)
    assert rc == 1 and len(after) == len(before) + 1
    assert after[:-1] == before   # the whole runs are the runs of the whole lines
    assert after[-1]["error"].startswith(f"truncated_trace: output.jsonl is cut short: "
                                         f"line {len(lines)} ends without its newline")


def test_watched_a_last_line_being_written_is_no_cut_until_the_run_ends_on_it(tmp_path):
    """``watch``: a trace still being written holds its unfinished last line back: no
    problem while it grows. Ended there (idle), the record is replay's: an error,
    counted in ``streameval_unscored_runs_total``."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = run_dir(runs)
    trace = d / "trace.jsonl"
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20)]
    tail = c.read("src/util.py", UTIL, 1, 5)
    trace.write_bytes(b"\n".join([*lines, tail[0]]) + b"\n" + tail[1][:30])
    res = load_resources(str(s.gold), None, str(s.repo))
    w = started(runs, res, tmp_path, idle=10.0)
    run = w.table.runs[str(trace)]
    snap = run.session.snapshot()
    assert snap.error is None and snap.num_steps == 1 and "truncated_trace" not in snap.problems
    assert snap.bad_lines == {}

    w.tick(now=w.followers[trace].last_growth + 60.0)   # idle: it ends as it stands
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert line == orjson.dumps(evaluate_trace(trace, res)[0])
    assert orjson.loads(line)["error"].startswith("truncated_trace: r1/trace.jsonl is cut short")
    assert w.table.stats.unscored == {"truncated_trace": 1}


def test_watched_a_last_line_that_gets_its_end_is_scored(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    whole = b"\n".join([c.init(), *c.read("src/app.py", APP, 1, 20), c.result()]) + b"\n"
    trace.write_bytes(whole[:-25])
    res = load_resources(str(s.gold), None, str(s.repo))
    w = started(runs, res, tmp_path, idle=10.0)
    trace.write_bytes(whole)
    w.changed(trace)
    w.tick(now=w.followers[trace].last_growth + 60.0)
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    rec = orjson.loads(line)
    assert "error" not in rec and rec["bad_lines"] == {} and w.table.stats.unscored == {}


# --------------------------------------------------------------------------- actions not read


def test_actions_of_which_no_call_could_be_read_are_an_error(tmp_path, real_fixtures):
    """A real OpenHands SDK event stream whose ActionEvents lost the field the reader
    needs (a newer version renaming it): 0 calls is no run that read nothing."""
    s = make_setup(tmp_path)
    src = real_fixtures / "openhands-sdk" / "openhands-sdk__streameval__scripted-1.58.0.events.jsonl"
    events = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    actions = 0
    for e in events:
        if e.get("kind") == "ActionEvent":
            e["tool"] = e.pop("tool_name")
            actions += 1
    assert actions > 0
    trace = tmp_path / "events.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    common = ["--gold", str(s.gold), "--repo", str(s.repo), "--instance", s.instance]
    rc, [rec] = replay(tmp_path, str(trace), *common)
    assert rc == 1
    assert rec["error"].startswith("no_calls_read: ")
    assert f"/events.jsonl holds {actions} action(s) and none could be read as a tool call " \
        "(line " in rec["error"]
    assert "--format" in rec["error"]
    rc, [rec] = replay(tmp_path, str(src), *common)
    assert rc == 0 and rec["tool_calls"] > 0 and rec["bad_lines"].get("unread_action") is None


# --------------------------------------------------------------------------- flagged runs


def test_a_run_that_read_nothing_is_flagged_and_its_precision_marked(tmp_path, capsys):
    """Edits and commands, no read: precision 1.0 everywhere by convention. Scored (exit
    0), flagged ``nothing_read``, and the table marks the precision and counts the run."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    reading_run(run_dir(runs, name="reads"))
    c = Claude()
    append(run_dir(runs, name="blind") / "trace.jsonl", c.init(),
           *bash(c, "pip install -e .", "Successfully installed demo"),
           *bash(c, "python -m pytest -q", "3 passed in 0.01s"), c.result())
    rc = main(["replay", str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
               "--out", str(tmp_path / "o.jsonl")])
    assert rc == 0
    blind, reads = (orjson.loads(x) for x in (tmp_path / "o.jsonl").read_bytes().splitlines())
    assert blind["run_id"] == "blind" and blind["problems"] == {"nothing_read": 1}
    assert blind["tool_calls"] == 2 and blind["final"]["line"]["precision"] == 1.0
    assert "nothing_read" not in reads["problems"]
    table = capsys.readouterr().out
    assert "flagged runs: 1 of 2 (nothing_read 1)" in table
    file_row = next(x for x in table.splitlines() if x.startswith("file "))
    assert file_row.split()[3] == "1.000*" and file_row.endswith("2 (1)")
    assert "* includes runs that predicted nothing there" in table


def test_a_run_reading_mostly_outside_the_repository_is_flagged(tmp_path):
    s = make_setup(tmp_path)
    d = run_dir(tmp_path / "runs")
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20),
           *read_abs(c, "/etc/hosts", "127.0.0.1 localhost\n"),
           *read_abs(c, "/usr/lib/python3.11/os.py", "import abc\n"), c.result())
    rc, [rec] = replay(tmp_path, str(d / "trace.jsonl"), "--gold", str(s.gold), "--repo",
                       str(s.repo))
    assert rc == 0 and rec["problems"]["mostly_outside_repo"] == 1
    assert rec["problems"]["path_outside_repo"] == 2 and rec["num_steps"] == 1


@pytest.mark.parametrize("outside", [0, 1])
def test_half_the_paths_outside_is_no_flag(tmp_path, outside):
    s = make_setup(tmp_path)
    d = run_dir(tmp_path / "runs")
    c = Claude()
    reads = [*c.read("src/app.py", APP, 1, 20)]
    if outside:
        reads += read_abs(c, "/etc/hosts", "127.0.0.1 localhost\n")
    append(d / "trace.jsonl", c.init(), *reads, c.result())
    rc, [rec] = replay(tmp_path, str(d / "trace.jsonl"), "--gold", str(s.gold), "--repo",
                       str(s.repo))
    assert rc == 0 and "mostly_outside_repo" not in rec["problems"]


def test_workspace_reads_of_a_repo_at_another_root_are_all_outside(tmp_path):
    """The agent's files are not the repository's (the run was in another checkout)."""
    s = make_setup(tmp_path)
    d = run_dir(tmp_path / "runs")
    c = Claude()
    append(d / "trace.jsonl", c.init(), *read_abs(c, f"{WORKSPACE}/lib/other.py", "x = 1\n"),
           *read_abs(c, f"{WORKSPACE}/lib/more.py", "y = 2\n"), c.result())
    rc, [rec] = replay(tmp_path, str(d / "trace.jsonl"), "--gold", str(s.gold), "--repo",
                       str(s.repo))
    assert rc == 0
    assert rec["problems"] == {"mostly_outside_repo": 1, "nothing_read": 1,
                               "path_not_in_repo": 2}


def test_reads_naming_directories_of_the_repository_are_inside_it(tmp_path):
    """``ls -R && grep -r``: the ``./src:`` header of the listing reads as a grep hit
    naming ``./src``, a folder of the repository. No file, but no path outside the
    repository either: with ``/etc/hosts`` read, 1 of the 3 paths named is outside."""
    s = make_setup(tmp_path)
    d = run_dir(tmp_path / "runs")
    c = Claude()
    listing = ".:\nsrc\n\n./src:\napp.py\nutil.py\n./src/app.py:def f1(x):"
    append(d / "trace.jsonl", c.init(), *bash(c, 'ls -R && grep -r "def f1" .', listing),
           *read_abs(c, "/etc/hosts", "x\n"), c.result())
    rc, [rec] = replay(tmp_path, str(d / "trace.jsonl"), "--gold", str(s.gold), "--repo",
                       str(s.repo))
    assert rc == 0 and "mostly_outside_repo" not in rec["problems"]
    assert rec["problems"] == {"path_not_in_repo": 1, "path_outside_repo": 1}
