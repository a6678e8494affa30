"""streameval: score coding agents while they run (ContextBench metrics, live).

The public API is small and imported lazily: ``import streameval`` loads no grammar,
no pyarrow and no prometheus client.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GoldInstance", "InstanceState", "IntervalSet", "Step", "load_gold", "evaluate_trace"]
__version__ = "0.1.0"

_LAZY = {
    "GoldInstance": "streameval.sources.gold",
    "load_gold": "streameval.sources.gold",
    "InstanceState": "streameval.scoring.state",
    "IntervalSet": "streameval.intervals",
    "Step": "streameval.model",
    "evaluate_trace": "streameval.runs.evaluate",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'streameval' has no attribute {name!r}")
