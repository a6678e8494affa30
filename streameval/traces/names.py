"""Which files are traces, by name: derived from the adapters, stated nowhere else.

Each adapter names the files its format is written under (``Adapter.patterns``:
``rollout-*.jsonl``, ``*.traj``...), and streameval's own run directories (the push
spool, the examples) call theirs ``trace.jsonl``. From these come the globs ``watch``
follows by default, the endings a run id leaves out (``<run>.traj.json`` is run
``<run>``) and the extensions replay takes from a directory, so that a format added
with its patterns is watched, named and replayed alike.

Computed on first use: listing the patterns imports every adapter, which ``import
streameval`` does not need.
"""

from __future__ import annotations

from functools import cache

from streameval.traces.formats import FORMATS, adapter_class

__all__ = ["TRACE_NAME", "trace_patterns", "trace_suffixes", "trace_extensions"]

#: the trace of a run directory (``<run>/trace.jsonl`` beside ``meta.json``), any format
TRACE_NAME = "trace.jsonl"


@cache
def trace_patterns() -> tuple[str, ...]:
    """The globs of trace file names: ``trace.jsonl``, then each format's, in the
    registry's order, each once."""
    found = [TRACE_NAME]
    for fmt in FORMATS:
        found.extend(p for p in adapter_class(fmt).patterns if p not in found)
    return tuple(found)


def _ending(pattern: str) -> str:
    """What follows a pattern's last wildcard (``*.traj.json`` -> ``.traj.json``), or a
    fixed name's extension (``trace.jsonl`` -> ``.jsonl``)."""
    return pattern.rsplit("*", 1)[1] if "*" in pattern else pattern[pattern.rfind("."):]


@cache
def trace_suffixes() -> tuple[str, ...]:
    """Endings a run id leaves out, longest first (``.traj.json`` before ``.json``)."""
    return tuple(sorted({_ending(p) for p in trace_patterns()}, key=lambda s: (-len(s), s)))


@cache
def trace_extensions() -> tuple[str, ...]:
    """The extensions of trace files (``.jsonl``, ``.json``, ``.traj``), in the order of
    the patterns: what replay takes from a directory, whatever the rest of the name."""
    return tuple(dict.fromkeys(p[p.rfind("."):] for p in trace_patterns()))
