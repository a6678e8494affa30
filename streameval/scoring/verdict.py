"""Whether a run's numbers mean what they seem: the run-level problems (docs/metrics.md §5b).

A trace that was cut short, a reader that took none of the actions a trace holds, or a
run that read nothing all give numbers (coverage 0.0, precision 1.0) that look like a
verdict on the agent and are not. This module says so from the run's counts alone, one
rule each, so the record, ``/metrics``, ``inspect`` and the tables all tell it the same way:

- **errors** (the record is an error record; replay exits 1): ``truncated_trace`` (the
  trace ends mid-document, or on a line without its newline whose JSON does not parse)
  and ``no_calls_read`` (the adapter saw actions and made no call of any);
- **flags** (the run is scored, and its ``problems`` carry the flag): ``nothing_read``
  (the final context is empty at every granularity, so every precision is 1.0 by
  convention), ``mostly_outside_repo`` (more than half the paths its reads named
  are neither a file nor a folder of the repository), and ``no_gold`` / ``no_repo``
  (measured against no gold: its gold-free signals stand, its gold metrics are null);
- **loud flags** (scored and flagged, and replay exits 1 over them: the numbers may be
  wrong, not only say less): ``no_end_event`` (a trace of a shape that always ends with
  an end event ended without it: cut at a line's end, or its agent killed or still at
  work) and ``repo_mismatch`` (reads did not find their text in the repository where
  they say it is: the repository, or its commit, is not the one the agent read).

Scoring knows no files or formats: the facts come in as counts and the trace's own
messages (the first ``partial_line`` and ``unread_action`` bad lines).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streameval.errors import Reason


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the rules read of one run (``RunSession.facts``)."""

    tool_calls: int
    sidechain_calls: int
    bad_lines: Mapping[str, int]
    #: the first message of each bad-line reason (the line it happened on)
    first_bad: Mapping[str, str]
    #: reads of file contents (not listings), and those whose path named neither a file
    #: nor a folder of the repository
    named_paths: int
    outside_paths: int
    #: the final context is empty at every granularity; None when the run is not scored
    context_empty: bool | None
    #: why the run is measured against no gold (``no_gold: ...``, ``no_repo: ...``)
    gold_missing: str | None = None
    #: the end event the trace's shape always ends with, when it ended without it
    end_missing: str | None = None
    #: reads whose text was compared with the repository's at the lines they name (in
    #: files the run had not edited), and those that did not find it there
    reads_checked: int = 0
    reads_mismatching: int = 0


#: ``repo_mismatch`` needs this many mismatching reads, and this share of the reads
#: checked: a run on the right repository may read a file its environment changed (a
#: SWE-bench image's ``tox.ini``, ``setup.py``), one or two reads in 203 corpus runs
#: (5% at most where more than one; issue 32)
MISMATCH_READS = 2
MISMATCH_SHARE = 0.2


def mismatch_share(facts: RunFacts) -> float | None:
    """The share of checked reads that did not find their text, when ``repo_mismatch``
    holds; None when it does not."""
    checked, bad = facts.reads_checked, facts.reads_mismatching
    if bad >= MISMATCH_READS and bad >= MISMATCH_SHARE * checked:
        return bad / checked
    return None


def _cut(facts: RunFacts) -> bool:
    return facts.bad_lines.get(Reason.PARTIAL_LINE.value, 0) > 0


def _unread_only(facts: RunFacts) -> bool:
    return facts.bad_lines.get(Reason.UNREAD_ACTION.value, 0) > 0 and \
        facts.tool_calls + facts.sidechain_calls == 0


def figures(facts: RunFacts) -> dict[str, dict[str, int]]:
    """What a flag's record carries besides the flag: ``repo_mismatch``'s reads checked
    and mismatching, on a record that carries the flag only."""
    if mismatch_share(facts) is None:
        return {}
    return {Reason.REPO_MISMATCH.value: {"reads_checked": facts.reads_checked,
                                         "reads_mismatching": facts.reads_mismatching}}


def problems(facts: RunFacts) -> dict[str, int]:
    """The run-level problems as ``problems`` counts them: 1 for each that holds now.

    Live, they hold *so far* (a run being written has read nothing yet); the record
    takes them at the run's end."""
    out: dict[str, int] = {}
    if _cut(facts):
        out[Reason.TRUNCATED_TRACE.value] = 1
    if _unread_only(facts):
        out[Reason.NO_CALLS_READ.value] = 1
    if facts.context_empty:
        out[Reason.NOTHING_READ.value] = 1
    if facts.named_paths and 2 * facts.outside_paths > facts.named_paths:
        out[Reason.MOSTLY_OUTSIDE_REPO.value] = 1
    if facts.gold_missing:
        out[facts.gold_missing.split(":", 1)[0]] = 1
    if facts.end_missing:
        out[Reason.NO_END_EVENT.value] = 1
    if mismatch_share(facts) is not None:
        out[Reason.REPO_MISMATCH.value] = 1
    return out


def unscorable(facts: RunFacts, trace: str | None) -> tuple[Reason, str] | None:
    """The error a finished run's record carries instead of numbers, with its one-line
    message and hint; None when the numbers stand (flags or not)."""
    name = trace or "the trace"
    if _cut(facts):
        what = facts.first_bad.get(Reason.PARTIAL_LINE.value, "the trace ends mid-way")
        return Reason.TRUNCATED_TRACE, (
            f"{name} is cut short: {what}; score it once the file is whole (copy it "
            "again, or wait until the agent has written it)")
    if _unread_only(facts):
        n = facts.bad_lines[Reason.UNREAD_ACTION.value]
        example = facts.first_bad.get(Reason.UNREAD_ACTION.value, "")
        return Reason.NO_CALLS_READ, (
            f"{name} holds {n} action(s) and none could be read as a tool call "
            f"({example}); check --format, or see `streameval inspect {name}`")
    return None


def error(facts: RunFacts | None, trace: str | None, session_error: str | None,
          scored: bool) -> str | None:
    """``reason: message`` of a finished run's error record, or None: a cut trace first
    (nothing else about it can be trusted, its identity included), then the session's
    own error (no gold, no repository...), then actions of which no call was read.
    ``facts`` is None for a format that states its context (no calls to judge)."""
    found = unscorable(facts, trace) if facts is not None else None
    if found is not None and (found[0] is Reason.TRUNCATED_TRACE or session_error is None):
        return f"{found[0].value}: {found[1]}"
    if session_error is not None or not scored:
        return session_error or "not evaluated"
    return None


__all__ = ["RunFacts", "error", "figures", "mismatch_share", "problems", "unscorable"]
