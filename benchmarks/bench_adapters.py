"""Adapter throughput on the largest real traces: the parser alone, then parser + steps.

For each file (default: the 1.1 MB Codex rollout and the 1.0 MB Claude stream in
``tests/fixtures/real/``) it prints lines/s and MB/s for

- *adapter*: ``adapter.feed(line)`` for every line, then ``close()`` (JSON decoding and
  event building only);
- *adapter + steps*: ``session.TraceReader`` routing the events to ``RunSession``s
  without gold or repository (``StepBuilder(None)``: categories, shell analysis, read
  and edit inference; no metric state, since there is no gold to score against).

Lines are read into memory first, so file I/O is not timed. Each figure is the best of
``--repeat`` runs (default 5) with a fresh adapter each time.

    python benchmarks/bench_adapters.py [--repeat N] [FILE ...]

No pytest: wall-clock numbers belong here, not in tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from machine import describe

from streameval.model import RunIdentity
from streameval.runs.reader import TraceReader
from streameval.scoring.session import RunSession
from streameval.traces.files import iter_lines, open_adapter

REAL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
DEFAULT_FILES = (
    REAL / "codex-rollout" / "codex-rollout__jnarowski__agentcmd__rollout-2025-09-24T19-22-20-01997e76.jsonl",
    REAL / "claude-stream" / "claude-stream__link-assistant__hive-mind__issue-759-uploaded-log.extracted.jsonl",
)


def adapter_only(path: Path, lines: list[tuple[bytes, int]]) -> tuple[float, int]:
    _name, adapter = open_adapter(path)
    events = 0
    t = time.perf_counter()
    for line, lineno in lines:
        events += len(adapter.feed(line, lineno))
    events += len(adapter.close())
    return time.perf_counter() - t, events


def adapter_and_steps(path: Path, lines: list[tuple[bytes, int]]) -> tuple[float, int, int, int]:
    name, adapter = open_adapter(path)
    ident = RunIdentity("bench", "bench")

    def factory(_instance: str | None) -> RunSession:
        return RunSession(ident, fmt=name)

    reader = TraceReader(adapter, factory)
    t = time.perf_counter()
    for line, lineno in lines:
        reader.feed_line(line, lineno)
    sessions = reader.close()
    elapsed = time.perf_counter() - t
    calls = sum(s.extras.tool_calls for s in sessions)
    steps = sum(s.num_steps for s in sessions)
    return elapsed, calls, steps, len(sessions)


def best(fn, repeat: int, *args):
    runs = [fn(*args) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", type=Path, default=list(DEFAULT_FILES))
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    print("machine:", describe())
    for path in args.files:
        lines = list(iter_lines(path))
        size = path.stat().st_size
        name, _ = open_adapter(path)
        a_s, events = best(adapter_only, args.repeat, path, lines)
        s_s, calls, steps, runs = best(adapter_and_steps, args.repeat, path, lines)
        print(f"{path.name}\n    format {name}, {size / 1e6:.2f} MB, {len(lines):,} lines, "
              f"{events:,} events, {calls:,} tool calls, {steps:,} steps, {runs} run(s)")
        print(f"    adapter          {a_s * 1e3:8.1f} ms  {len(lines) / a_s:>10,.0f} lines/s  "
              f"{size / a_s / 1e6:6.1f} MB/s")
        print(f"    adapter + steps  {s_s * 1e3:8.1f} ms  {len(lines) / s_s:>10,.0f} lines/s  "
              f"{size / s_s / 1e6:6.1f} MB/s  ({calls / s_s:,.0f} tool calls/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
