"""What machine a benchmark ran on: every figure is printed with it."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict:
    """platform, CPU model, cores (and those this process may use), Python, memory."""
    mem = _proc_field("/proc/meminfo", "MemTotal")
    return {"platform": platform.platform(),
            "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
            "cores": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "memory": f"{int(mem.split()[0]) / 1024 / 1024:.1f} GiB" if mem else "unknown"}


def describe() -> str:
    return ", ".join(f"{k}={v}" for k, v in machine().items())
