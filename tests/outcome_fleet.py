"""Runs with known outcomes, made by the tests: Claude Code stream-json traces of Reads,
each message stating 100 input tokens, in repositories named by SWE-bench style ids
(``alpha__alpha-1`` is of ``alpha/alpha``), with no gold: every run is measured on its
gold-free signals (docs/outcomes.md §2).

A run is a list of the files its calls read, one Read per call (``f3`` reads
``src/f3.py`` lines 1-10), then Claude's ``result`` line (the run's end, its total usage:
the messages' sum), so by hand: call k is step k, the run had spent 100 k tokens after
it, two calls of the same file are the same call (same tool, same input).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

WORKSPACE = "/workspace/fleet"
TOKENS_PER_CALL = 100


def _line(obj: dict) -> str:
    return json.dumps(obj)


def trace_lines(files: list[str], session: str) -> list[str]:
    """The stream-json lines of a run that reads ``files`` in order."""
    out = [_line({"type": "system", "subtype": "init", "cwd": WORKSPACE, "session_id": session,
                  "tools": ["Read"], "model": "fleet-model"})]
    for n, name in enumerate(files, 1):
        tid = f"toolu_{n:04d}"
        out.append(_line({"type": "assistant", "session_id": session, "message": {
            "id": f"msg_{n}", "role": "assistant", "model": "fleet-model",
            "content": [{"type": "tool_use", "id": tid, "name": "Read",
                         "input": {"file_path": f"{WORKSPACE}/src/{name}.py", "offset": 1,
                                   "limit": 10}}],
            "usage": {"input_tokens": TOKENS_PER_CALL, "output_tokens": 0}}}))
        body = "\n".join(f"{i:>6}\u2192line {i} of {name}" for i in range(1, 11))
        out.append(_line({"type": "user", "session_id": session, "message": {
            "role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                         "content": body}]}}))
    # the end of the run, with its total usage (the messages' sum) and no cost
    out.append(_line({"type": "result", "subtype": "success", "is_error": False,
                      "num_turns": len(files), "session_id": session,
                      "usage": {"input_tokens": TOKENS_PER_CALL * len(files),
                                "output_tokens": 0}}))
    return out


def write_fleet(root: Path, runs: dict[str, tuple[str, bool | None, list[str]]]) -> Path:
    """``runs``: run id -> (instance id, resolved, files read). Writes ``root/runs/<id>/``
    (trace.jsonl, meta.json) and ``root/outcomes.csv`` (``instance_id, resolved``, for
    the runs whose outcome is known); returns the runs' folder."""
    folder = root / "runs"
    rows = []
    for run_id, (instance, resolved, files) in runs.items():
        d = folder / run_id
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": run_id,
                                                 "agent": "fleet", "model": "fleet-model"}))
        (d / "trace.jsonl").write_text("\n".join(trace_lines(files, run_id)) + "\n")
        if resolved is not None:
            rows.append({"instance_id": instance, "resolved": str(resolved).lower()})
    with open(root / "outcomes.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, ["instance_id", "resolved"])
        w.writeheader()
        w.writerows(rows)
    return folder


def files(*names: str | tuple[str, int]) -> list[str]:
    """``files("f1", ("f2", 3))`` is f1, f2, f2, f2."""
    out: list[str] = []
    for n in names:
        out.extend([n] if isinstance(n, str) else [n[0]] * n[1])
    return out
