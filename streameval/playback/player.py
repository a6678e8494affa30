"""Re-enact recorded traces: write their lines into a watched directory, on time.

``streameval replay --live`` and ``streameval demo`` use this so Grafana and the page can
show past runs as if they were happening, and the demo can show a run live. The player
copies bytes, or for a whole-document trace makes its step-by-step saves again
(``documents``); it never runs anything from the trace. The watcher scores them exactly
as it would a real agent's writes.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from streameval.errors import TraceFormatError
from streameval.playback.documents import saves
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.jsonl import parse_timestamp
from streameval.traces.identity import META_NAME, PATCH_NAMES

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


def stage_run(trace: Path, into: Path, name: str | None = None) -> tuple[Path, Path]:
    """Create the run's place under ``into``: ``name`` (the trace's path as replay and
    watch name it, relative to the directory it was found under; else its directory
    and file name), with the trace's meta.json; return (dir, target trace). Same name,
    same run id: a played run is the run ``replay`` and ``watch`` name. The same trace
    given twice goes to a directory suffixed ``-2``, ``-3``..."""
    rel = Path(name) if name else Path(trace.parent.name or "run") / trace.name
    run_dir = into / rel.parent
    n = 1
    while (run_dir / rel.name).exists():   # the same trace given twice: a directory apart
        n += 1
        run_dir = into / rel.parent.parent / f"{rel.parent.name or trace.stem}-{n}"
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = trace.parent / META_NAME
    if meta.exists() and not (run_dir / META_NAME).exists():
        shutil.copyfile(meta, run_dir / META_NAME)
    target = run_dir / rel.name
    target.write_bytes(b"")
    return run_dir, target


async def play(trace: Path, into: Path, speed: float = 1.0, land_patch: bool = True,
               name: str | None = None) -> Path:
    """Write ``trace`` into a fresh run directory under ``into``: line by line, or, for
    a document format whose growth is known (``documents.GROWTH``), save by save.

    The patch beside the original (if any) lands after the last line, as it would
    when an agent harness finishes a run.
    """
    run_dir, target = stage_run(trace, into, name)
    data = trace.read_bytes()
    steps = saves(data, _format(trace))
    if steps is not None:
        await _play_saves(steps, target, speed)
    else:
        await _play_lines(data, target, speed)
    if land_patch:
        for patch in PATCH_NAMES:
            src = trace.parent / patch
            if src.exists():
                tmp = run_dir / (patch + ".tmp")
                shutil.copyfile(src, tmp)
                tmp.replace(run_dir / patch)
                break
    return target


def _format(trace: Path) -> str | None:
    try:
        return detect_format(read_head(trace))
    except (TraceFormatError, OSError):
        return None


async def _play_lines(data: bytes, target: Path, speed: float) -> None:
    import anyio

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    with open(target, "ab", buffering=0) as fh:
        for item in schedule(lines, speed):
            if item.delay > 0:
                await anyio.sleep(item.delay)
            fh.write(item.line + b"\n")


async def _play_saves(steps, target: Path, speed: float, gap: float = 0.4) -> None:
    """Each save written over the last in one write, as the agents save (in place)."""
    import anyio

    first = True
    for data in steps:
        if not first:
            await anyio.sleep(gap / max(speed, 1e-6))
        first = False
        with open(target, "r+b", buffering=0) as fh:
            fh.truncate(0)
            fh.write(data)
