"""The watcher starts whatever is under the root (issue 18): a directory it cannot read
and a link into /proc, both there at start, made 648f216's watcher exit 1 with no
record. A real ``streameval watch`` process, without the capabilities that let root
read anything (so ``chmod 000`` means what it means for any user)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import orjson
import pytest
from claude_run import APP, Claude, append, make_setup, wait_until, whole_lines

pytestmark = pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv")

NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _run(runs, run_id: str, instance: str) -> None:
    d = runs / run_id
    d.mkdir()
    (d / "meta.json").write_text(orjson.dumps({"instance_id": instance, "run_id": run_id}).decode())
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20), c.result())


def test_an_unreadable_directory_and_a_proc_link_do_not_keep_the_watcher_down(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    locked = runs / "locked"
    locked.mkdir()
    (locked / "trace.jsonl").write_text("{}\n")
    locked.chmod(0)
    os.symlink("/proc", runs / "proc-link")
    (runs / "deep").mkdir()
    os.symlink("/sys", runs / "deep" / "sys-link")
    _run(runs, "before", s.instance)
    out = tmp_path / "out.jsonl"
    log = tmp_path / "watch.log"
    cmd = [*NO_DAC, sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(out), "--idle-timeout", "1",
           "--patch-grace", "0"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        def ids() -> set[str]:
            return {orjson.loads(x)["run_id"] for x in whole_lines(out)}

        wait_until(lambda: "before" in ids() or proc.poll() is not None, 60, "the first record")
        assert proc.poll() is None, log.read_text()[-3000:]
        _run(runs, "after", s.instance)          # beside the bad entries, after start
        wait_until(lambda: "after" in ids() or proc.poll() is not None, 60, "the second record")
        assert proc.poll() is None, log.read_text()[-3000:]
    finally:
        proc.terminate()
        proc.wait(20)
        locked.chmod(0o755)
    text = log.read_text()
    assert text.count("locked cannot be read") == 1 and "proc-link" in text
