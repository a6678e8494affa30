"""Side files an agent can plant (FIFOs, symlinks to /dev/zero or to files it wants
overwritten), a corrupt checkpoint, a torn ``--out`` line and a full disk: the watcher
goes on, says why, counts it, and writes nothing outside the places it was given."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude, append, started, watcher

from streameval.fileio import SideFileError, cut_torn_tail, read_limited, write_atomic
from streameval.live.abort.actions import write_abort_file
from streameval.live.abort.policy import Decision
from streameval.live.outputs import CHECKPOINT_VERSION
from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line


def _run(runs: Path, s, name: str = "demo__demo-1") -> tuple[Path, Path]:
    d = runs / name
    d.mkdir()
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 5),
           c.result())
    return d, trace


def _in_time(fn, seconds: float = 20.0):
    """Run ``fn`` in a thread: a side file that blocks would hang it forever."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked on a side file"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _tree(root: Path) -> dict[str, bytes | str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "->" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = p.read_bytes()
    return out


# ------------------------------------------------------------------ reading side files


@pytest.mark.parametrize("name", ["meta.json", "patch.diff", "model.patch"])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory", "huge"])
def test_planted_side_file_never_blocks_and_the_record_is_written(env, tmp_path, name, kind):
    s, runs, res = env
    d, trace = _run(runs, s)
    side = d / name
    if kind == "fifo":
        os.mkfifo(side)
    elif kind == "dev_zero":
        side.symlink_to("/dev/zero")
    elif kind == "directory":
        side.mkdir()
    else:
        with open(side, "wb") as fh:
            fh.truncate(200 << 20)   # sparse: 200 MB of zeros, over every limit
    w = _in_time(lambda: started(runs, res, tmp_path))
    _in_time(w.tick)
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    rec = orjson.loads(line)
    assert rec["num_steps"] == 2 and rec["final"]["file"]["coverage"] == 1.0
    assert "patch_source" not in rec or rec["patch_source"] != "file"


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory"])
def test_read_limited_refuses_what_is_not_a_small_regular_file(tmp_path, kind):
    p = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "symlink":
        (tmp_path / "real").write_text("{}")
        p.symlink_to(tmp_path / "real")
    else:
        p.mkdir()
    with pytest.raises(SideFileError):
        _in_time(lambda: read_limited(p))


def test_read_limited_reads_a_regular_file_and_stops_at_the_limit(tmp_path):
    p = tmp_path / "x"
    assert read_limited(p) is None
    p.write_bytes(b"a" * 100)
    assert read_limited(p, 100) == b"a" * 100
    with pytest.raises(SideFileError, match="limit"):
        read_limited(p, 99)


# ------------------------------------------------------------------ writing ABORT


def _decision(run_id: str = "r1") -> Decision:
    return Decision(policy="budget", kind="max_steps", action="file", run_key="k",
                    run_id=run_id, instance_id="demo__demo-1", step=7, value=7, limit=6,
                    reason="too many steps")


def test_abort_file_is_never_written_through_a_planted_symlink(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # every name a predictable temporary file could have, and ABORT itself
    for name in (f".ABORT.{os.getpid()}.tmp", ".ABORT.tmp", "ABORT.tmp"):
        (d / name).symlink_to(victim)
    (d / "ABORT").symlink_to(victim)
    assert write_abort_file(d, _decision()) == "written"
    assert victim.read_text() == "precious\n"
    assert not (d / "ABORT").is_symlink()
    doc = json.loads((d / "ABORT").read_text())
    assert doc["policy"] == "budget" and doc["run_id"] == "r1"
    # nothing but ABORT and the planted links is left behind
    assert sorted(p.name for p in d.iterdir()) == sorted(
        [f".ABORT.{os.getpid()}.tmp", ".ABORT.tmp", "ABORT.tmp", "ABORT"])


def test_abort_file_as_a_fifo_is_replaced_not_read(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    os.mkfifo(d / "ABORT")
    assert _in_time(lambda: write_abort_file(d, _decision())) == "written"
    assert json.loads((d / "ABORT").read_text())["decisions"][0]["run_id"] == "r1"


def test_write_atomic_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(OSError):
        write_atomic(tmp_path / "missing-dir" / "f", b"x")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ checkpoint


@pytest.mark.parametrize("content", [
    b"[]", b'{"files": []}', b'{"version": 99, "files": {}}', b'{"version": 1, "files": {"a": 3}}',
    b"not json", b"", "dir", "fifo"], ids=repr)
def test_corrupt_checkpoint_is_a_warning_and_a_fresh_start(env, tmp_path, content, caplog):
    s, runs, res = env
    _d, trace = _run(runs, s)
    cp = tmp_path / "cp.json"
    if content == "dir":
        cp.mkdir()
    elif content == "fifo":
        os.mkfifo(cp)
    else:
        cp.write_bytes(content)
    w = watcher(runs, res, tmp_path, checkpoint=cp)
    assert _in_time(w.restore_checkpoint) == 0
    assert "starting afresh" in caplog.text
    w.scan()
    w.poll_all()
    w.tick()
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert line + b"\n" == record_line(evaluate_trace(trace, res)[0])


def test_checkpoint_paths_outside_the_root_are_not_followed(env, tmp_path, caplog):
    s, runs, res = env
    _d, trace = _run(runs, s)
    outside = tmp_path / "elsewhere" / "trace.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(trace.read_bytes())
    cp = tmp_path / "cp.json"
    cp.write_bytes(orjson.dumps({"version": CHECKPOINT_VERSION, "root": str(runs), "files": {
        str(outside): {"inode": outside.stat().st_ino, "offset": 0, "lineno": 0, "written": {}},
        str(trace): {"inode": trace.stat().st_ino, "offset": 0, "lineno": 0, "written": {}}}}))
    w = watcher(runs, res, tmp_path, checkpoint=cp)
    assert w.restore_checkpoint() == 1
    assert set(w.followers) == {trace}
    assert "outside" in caplog.text


# ------------------------------------------------------------------ --out


def test_torn_last_out_line_is_cut_before_the_next_record(env, tmp_path):
    s, runs, res = env
    _d, trace = _run(runs, s)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"instance_id": "earlier", "run_id": "x"}\n{"instance_id": "torn", "fin')
    w = watcher(runs, res, tmp_path, checkpoint=tmp_path / "cp.json")
    w.restore_checkpoint()
    w.scan()
    w.poll_all()
    w.tick()
    lines = out.read_bytes().split(b"\n")
    assert lines[0] == b'{"instance_id": "earlier", "run_id": "x"}'
    assert orjson.loads(lines[1])["num_steps"] == 2 and lines[2] == b""


def test_cut_torn_tail(tmp_path):
    p = tmp_path / "o"
    for before, after in [(b"", b""), (b"a\n", b"a\n"), (b"a\nb", b"a\n"), (b"b", b""),
                          (b"a\n" + b"x" * 200_000, b"a\n")]:
        p.write_bytes(before)
        assert cut_torn_tail(p) == len(before) - len(after)
        assert p.read_bytes() == after


def test_full_disk_on_out_is_counted_and_the_record_is_written_once_space_returns(env, tmp_path):
    """/dev/full answers every write with ENOSPC: a real full disk, no mock."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    s, runs, res = env
    _d, trace = _run(runs, s)
    w = watcher(runs, res, tmp_path)
    w.cfg.out = Path("/dev/full")
    w.scan()
    w.poll_all()
    w.tick()
    w.tick()
    assert w.table.stats.output_errors["out"] >= 1
    w.cfg.out = tmp_path / "out.jsonl"   # space again
    w.tick()
    [line] = w.cfg.out.read_bytes().splitlines()
    assert line + b"\n" == record_line(evaluate_trace(trace, res)[0])
    w.tick()
    assert len(w.cfg.out.read_bytes().splitlines()) == 1


def test_nothing_outside_the_run_directory_and_outputs_changes(env, tmp_path):
    """With every kind of planted side file at once, only --out and the checkpoint
    (the places named, and the run ids given since the checkpoint beside it) change;
    the run directories are as the agent left them."""
    s, runs, res = env
    d, _trace = _run(runs, s)
    os.mkfifo(d / "meta.json")
    (d / "patch.diff").symlink_to("/dev/zero")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (d / f".ABORT.{os.getpid()}.tmp").symlink_to(victim)
    before = _tree(tmp_path)
    w = _in_time(lambda: started(runs, res, tmp_path, checkpoint=tmp_path / "cp.json"))
    _in_time(w.tick)
    w.close()
    after = _tree(tmp_path)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {str(tmp_path / "out.jsonl"), str(tmp_path / "cp.json"),
                       str(tmp_path / "cp.json.claims")}


# ------------------------------------------------------------------ detection


def _written_in_two(trace: Path, content: bytes, cut: int, w) -> None:
    """The writer pauses after ``cut`` bytes while the watcher polls, then writes the rest."""
    trace.write_bytes(content[:cut])
    w.scan()
    w.poll_all()
    with open(trace, "ab") as fh:
        fh.write(content[cut:])
    w.changed(trace)


@pytest.mark.parametrize("case", ["bom", "junk_first_line", "pretty_document", "compact_document"])
def test_detection_waits_for_content_and_matches_replay(env, tmp_path, case):
    s, runs, res = env
    d = runs / s.instance
    d.mkdir()
    c = Claude()
    jsonl = b"\n".join([c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 5),
                        c.result()]) + b"\n"
    if case == "bom":
        name, content, cut = "trace.jsonl", b"\xef\xbb\xbf" + jsonl, 5
    elif case == "junk_first_line":
        name, content, cut = "trace.jsonl", b"starting agent...\n" + jsonl, 18
    else:
        from fixture_paths import REAL

        src = REAL / "mini-swe-agent" / "mini-swe-agent2__streameval__scripted-text-2.4.6.traj.json"
        doc = orjson.loads(src.read_bytes())
        name = "run.traj.json"
        content = (json.dumps(doc, indent=2) if case == "pretty_document" else json.dumps(doc)).encode()
        cut = 2 if case == "pretty_document" else 10
    trace = d / name
    w = watcher(runs, res, tmp_path, idle=3600)
    _written_in_two(trace, content, cut, w)
    w.tick(now=time.time() + 7200)   # idle: every run ends
    [replayed] = evaluate_trace(trace, res, root=runs)
    assert "error" not in replayed, replayed
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert line + b"\n" == record_line(replayed)
    assert replayed["tool_calls"] >= 2


def test_a_file_never_recognised_gets_replays_error_record_at_idle(env, tmp_path):
    s, runs, res = env
    d = runs / s.instance
    d.mkdir()
    trace = d / "trace.jsonl"
    trace.write_bytes(b"hello\nthis is not a trace\n")
    w = started(runs, res, tmp_path, idle=3600)
    w.tick()
    assert not (tmp_path / "out.jsonl").exists()     # still growing, maybe
    w.tick(now=time.time() + 7200)
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    [replayed] = evaluate_trace(trace, res, root=runs)
    assert "could not detect the trace format" in replayed["error"]
    assert line + b"\n" == record_line(replayed)
    assert w.table.stats.bad_lines["unknown_format"] == 1


# ------------------------------------------------------------------ growth


def test_an_output_jsonl_naming_a_new_instance_per_line_stays_under_max_runs(env, tmp_path):
    """OpenHands' output.jsonl holds one whole run per line: 60 lines, each a new
    instance, with --max-runs 10. Every run's record is written (equal to replay),
    at most 10 runs stay in memory, and the ones kept have let go of their reading
    state."""
    from fixture_paths import REAL

    s, runs, res = env
    src = (REAL / "openhands" / "openhands__nunu0404__Python_OpenHands__multi_swe_bench-examples-output.jsonl")
    template = orjson.loads(src.read_bytes().split(b"\n")[0])
    d = runs / "batch"
    d.mkdir()
    trace = d / "output.jsonl"
    w = watcher(runs, res, tmp_path, max_runs=10)
    w.scan()
    for i in range(60):
        append(trace, orjson.dumps({**template, "instance_id": f"org__repo-{i}"}))
        w.changed(trace)
        w.tick()
        assert len(w.table.runs) <= 10
    out = [orjson.loads(line) for line in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    replayed = evaluate_trace(trace, res, root=runs)
    assert sorted(r["run_id"] for r in out) == sorted(r["run_id"] for r in replayed)
    assert len(out) == 60
    assert w.table.stats.events["evicted"] >= 50
    assert all(r.session.builder is None for r in w.table.runs.values() if r.record_written)


# ------------------------------------------------------------------ permissions

_LOST_SEARCH = r'''
import json, os, sys, time
sys.path[:0] = sys.argv[1:3]
from pathlib import Path
from claude_run import watcher
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.scoring.record import record_line
tmp = Path(sys.argv[3])
res = load_resources(str(tmp / "gold.jsonl"), None, str(tmp / "repo"))
runs = tmp / "runs"
w = watcher(runs, res, tmp, idle=3600)
w.scan(); w.poll_all()
os.chmod(runs / "b", 0o600)          # b loses its search permission mid-run
w.scan(); w.poll_all(); w.tick()
w.changed(runs / "b" / "trace.jsonl"); w.tick(now=time.time() + 7200)
lines = (tmp / "out.jsonl").read_bytes().splitlines()
a = record_line(evaluate_trace(runs / "a" / "trace.jsonl", res, root=runs)[0])
os.chmod(runs / "b", 0o755)
print(json.dumps({"records": len(lines), "a_equal": lines[0] + b"\n" == a}))
'''


def test_a_run_directory_that_loses_its_search_permission_stops_nothing(tmp_path):
    """Root ignores permissions: as root the child runs without CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH (util-linux ``setpriv``), so the owner's modes hold for it."""
    import shutil
    import subprocess
    import sys

    from claude_run import make_setup

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        d = runs / name
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name}))
        c = Claude()
        append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    here = Path(__file__).resolve().parent
    cmd = [sys.executable, "-c", _LOST_SEARCH, str(here), str(here.parent), str(tmp_path)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without util-linux setpriv: permissions cannot be tested")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(runs / "b", 0o755)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # both runs were read before b went dark: both records, a exactly as replayed
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"records": 2, "a_equal": True}


def test_a_full_disk_is_logged_once_per_outage(env, tmp_path, caplog):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    s, runs, res = env
    _run(runs, s)
    w = watcher(runs, res, tmp_path)
    w.cfg.out = Path("/dev/full")
    w.scan()
    w.poll_all()
    for _ in range(5):
        w.tick()
    assert w.table.stats.output_errors["out"] == 5
    assert caplog.text.count("cannot write a record") == 1
    w.cfg.out = tmp_path / "out.jsonl"
    w.tick()
    assert "is written again" in caplog.text
