"""``watch --workers 2`` gives what ``watch --workers 1`` gives: the records (sorted:
workers append them as their runs end), ``/metrics`` once every run has ended (in both
formats, but for the series about the processes: lag, caches, stale runs, backlog, the
numbers' age), the page's fleet and the exit summary, byte for byte, on the bundled
example and every real trace of tests/fixtures (scripts/watch_snapshot.py; with
``--mirrors`` and ``--corpus`` it takes a corpus sample too). The real traces hold
three copies of one Claude Code session: which gets its id bare is one watcher's
choice with two workers too."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fixture_paths import ROOT

pytestmark = pytest.mark.slow


def _snapshot(tmp_path, workers: int):
    out = tmp_path / f"w{workers}"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "watch_snapshot.py"), str(out),
                           "--workers", str(workers), "--groups", "example,real",
                           "--scratch", str(tmp_path / "scratch"), "--timeout", "300"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_two_workers_give_what_one_gives(tmp_path):
    one, two = _snapshot(tmp_path, 1), _snapshot(tmp_path, 2)
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file())
    assert len(files) == 10
    for rel in files:
        assert (one / rel).read_bytes() == (two / rel).read_bytes(), rel
    records = (one / "real" / "records.jsonl").read_bytes()
    assert records.count(b"\n") > 40
    assert records.count(b'"run_id":"c7cd2a2a-d739-4a62-aead-d1a0f5ea8e73"') == 1   # bare once
