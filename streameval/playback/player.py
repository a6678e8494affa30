"""Re-enact recorded traces: write their lines into a watched directory, on time.

``streameval replay --live`` and ``streameval demo`` use this so Grafana can show past
runs as if they were happening, and the demo can show a run live. The player only
copies bytes (it never interprets or runs anything from the trace); the watcher
scores them exactly as it would a real agent's writes.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from streameval.traces.formats.jsonl import parse_timestamp
from streameval.traces.identity import META_NAME, PATCH_NAMES
from streameval.traces.names import TRACE_NAME

_TS = re.compile(rb'"timestamp"\s*:\s*"([0-9]{4}-[0-9]{2}-[0-9]{2}T[^"]+)"')


def line_time(line: bytes) -> float | None:
    """The ISO ``timestamp`` a JSON line carries (Claude sessions, Codex rollouts), if any."""
    m = _TS.search(line[:4096])
    # the adapters' own reading of a timestamp (naive = UTC), so gaps match theirs
    return parse_timestamp(m.group(1).decode("ascii", "replace")) if m else None


@dataclass(slots=True)
class Scheduled:
    """One line to write: after ``delay`` seconds (already divided by the speed)."""

    delay: float
    line: bytes


def schedule(lines: Iterable[bytes], speed: float = 1.0, default_gap: float = 0.4,
             max_gap: float = 5.0) -> list[Scheduled]:
    """When to write each line: the trace's own gaps when it has timestamps, else a
    steady ``default_gap``; gaps are capped at ``max_gap`` (before the speed-up) so a
    run that idled for an hour does not make the replay idle for an hour."""
    out: list[Scheduled] = []
    last: float | None = None
    for line in lines:
        ts = line_time(line)
        if ts is not None and last is not None:
            gap = min(max(ts - last, 0.0), max_gap)
        else:
            gap = default_gap if out else 0.0
        if ts is not None:
            last = ts
        out.append(Scheduled(gap / max(speed, 1e-6), line))
    return out


def stage_run(trace: Path, into: Path) -> tuple[Path, Path]:
    """Create ``into/<the trace's directory name>/`` (``-2``, ``-3``... when taken) with
    the trace's meta.json; return (dir, target trace). The played run keeps its identity:
    meta.json, or the directory name its trace is known by."""
    base = trace.parent.name or "run"
    run_dir, n = into / base, 1
    while run_dir.exists():
        n += 1
        run_dir = into / f"{base}-{n}"
    run_dir.mkdir(parents=True)
    meta = trace.parent / META_NAME
    if meta.exists():
        shutil.copyfile(meta, run_dir / META_NAME)
    name = trace.name if not trace.name.endswith(".jsonl") else TRACE_NAME
    target = run_dir / name
    target.write_bytes(b"")
    return run_dir, target


async def play(trace: Path, into: Path, speed: float = 1.0, land_patch: bool = True) -> Path:
    """Write ``trace`` line by line into a fresh run directory under ``into``.

    The patch beside the original (if any) lands after the last line, as it would
    when an agent harness finishes a run.
    """
    import anyio

    run_dir, target = stage_run(trace, into)
    lines = trace.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    with open(target, "ab", buffering=0) as fh:
        for item in schedule(lines, speed):
            if item.delay > 0:
                await anyio.sleep(item.delay)
            fh.write(item.line + b"\n")
    if land_patch:
        for name in PATCH_NAMES:
            src = trace.parent / name
            if src.exists():
                tmp = run_dir / (name + ".tmp")
                shutil.copyfile(src, tmp)
                tmp.replace(run_dir / name)
                break
    return target
