"""Records for comparison tests: scored runs of instances, with the fields ``compare``
reads (final coverage and F1 per granularity, per-step coverage, tokens, a repository,
an outcome), written as replay writes them."""

from __future__ import annotations

from pathlib import Path

import orjson

GRANULARITIES = ("file", "symbol", "span", "line")


def rec(iid: str, cov: float, *, agent: str = "a", tokens: int | None = None,
        steps: list[float] | None = None, repo: str | None = None, **extra) -> dict:
    """A scored record of ``iid`` whose coverage (and F1, precision 1) is ``cov`` at
    every granularity."""
    f1 = 2 * cov / (1 + cov) if cov == cov else cov
    block = {"coverage": cov, "precision": 1.0, "f1": f1, "intersection": 1, "gold_size": 1,
             "pred_size": 1}
    curve = steps if steps is not None else [cov]
    out = {"instance_id": iid, "num_steps": len(curve), "agent": agent,
           "final": {g: block for g in GRANULARITIES},
           "trajectory": {"steps": [{"step": i + 1, "coverage": {g: c for g in GRANULARITIES}}
                                    for i, c in enumerate(curve)],
                          "auc_coverage": {}, "redundancy": {}},
           "tokens": {"input": tokens or 0, "output": 0, "cache_read": 0, "cache_creation": 0},
           "cost_usd": None, **extra}
    if repo is not None:
        out["repo"] = repo
    return out


def error(iid: str, **extra) -> dict:
    return {"instance_id": iid, "error": "missing_repo: x", **extra}


def write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path
