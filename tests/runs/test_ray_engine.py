"""``replay --engine ray`` on a real Ray cluster: a head and a second worker node on this
machine, in a private network namespace with only loopback up (``unshare -n``), replay
the real fixture corpus and the bundled example. The records are the bytes ``--engine
local`` writes, and a worker killed in the middle of a task loses no instance.

The cluster and the replays run in ``ray_scenario.py`` inside the namespace; this test
starts it and reads what it saw. The planning (chunks of one repository) is checked
without Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streameval.runs.batch import BatchContext, ErrorJob, TraceJob, collect_jobs
from streameval.runs.ray_engine import plan
from streameval.scoring.record import Record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
GOLD = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"


def test_chunks_hold_one_repository_each_in_first_seen_order():
    context = BatchContext.build(str(GOLD), str(ROOT), None)
    jobs = list(collect_jobs([str(REAL)]))
    jobs.append(ErrorJob(Record.error(None, "unreadable_prediction", "x")))
    chunks = plan(jobs, context, chunk=3)
    covered = sorted(i for c in chunks for i in c.indexes)
    assert covered == [i for i, j in enumerate(jobs) if not isinstance(j, ErrorJob)]
    for c in chunks:
        assert 1 <= len(c.indexes) <= 3
        folders = {str(Path(jobs[i].path).parent) for i in c.indexes
                   if isinstance(jobs[i], TraceJob)}
        assert len({c.repo}) == 1 and (not folders or len(folders) <= len(c.indexes))
    repos = [c.repo for c in chunks]
    assert repos == sorted(set(repos), key=repos.index) or \
        all(repos[k] == repos[k + 1] or repos[k + 1] not in repos[:k + 1] for k in range(len(repos) - 1))


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_real_ray_cluster_replays_the_fixtures_as_local_does_and_survives_a_killed_worker(tmp_path):
    import ray  # noqa: F401 - the extra must be installed: CI installs it
    assert shutil.which("unshare") and shutil.which("ip"), "needs util-linux unshare and iproute2"
    out = tmp_path / "ray"
    # the clones of the fixtures' repositories ($STREAMEVAL_REPOS: more runs scored), else
    # none (every real run an error record, scored alike by both engines)
    env = {**os.environ}
    # a network namespace with loopback only, and a PID namespace of its own: Ray's
    # daemons die with the scenario, and ``ray stop`` there sees no other process
    run = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount", "--mount-proc",
                          sys.executable, str(HERE / "ray_scenario.py"), str(out)], capture_output=True, text=True, env=env, timeout=850,
                         stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads((out / "seen.json").read_text())
    assert seen["lo"] == 0 and seen["head"][0] == 0 and seen["node"][0] == 0, seen
    assert seen["nodes"] == 2, seen
    for name in ("real", "real-example"):
        local = (out / f"local-{name}.jsonl").read_bytes()
        assert local.count(b"\n") >= (40 if name == "real" else 2)
        assert seen[f"ray-{name}"][0] == seen[f"local-{name}"][0], seen
        assert (out / f"ray-{name}.jsonl").read_bytes() == local, name
    # the kill landed on a worker in the middle of a task, and its jobs were retried
    assert seen["killed"], seen
    assert "WorkerCrashedError" in seen["killed_run"][1], seen["killed_run"]
    assert seen["killed_run"][0] == seen["local-real"][0]
    assert (out / "killed.jsonl").read_bytes() == (out / "local-real.jsonl").read_bytes()
    assert b"worker_lost" not in (out / "killed.jsonl").read_bytes()
