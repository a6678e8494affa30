"""What ``streameval inspect`` shows: a table of tool calls with what each showed and
changed, then one summary per run (docs/inspect.md).

"Files read" in the summary are the files whose *lines* were shown; files only named
by a listing (``ls``, ``find``, Glob, ``grep -l``) are counted apart. Without a repo
nothing says which listed names are directories, so a name is taken for a directory
only when the trace itself shows it: it ends with ``/``, it is the workspace root
(``.``), or another path of the same run lies under it (SWE-agent's ``view /testbed``
prints ``/testbed/xarray`` and then ``/testbed/xarray/core.py``). With a repo every
name is checked against the base commit's files instead.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any, TextIO

from streameval.model import GRANULARITIES, ToolCall
from streameval.reading.describe import describe_call, describe_read, fmt_ranges

#: reads listed in the summary (and written to --json) per run
FIRST_READS = 10


class CallTable:
    """The per-call table; also remembers every read per run for the summary."""

    def __init__(self, out: TextIO | None, width: int, all_names: bool = False):
        self.out, self.width, self.all_names = out, width, all_names
        self.n = 0
        self._last: int | None = None
        #: id(session) -> calls seen in that run (reads are numbered per run)
        self.calls: dict[int, int] = {}
        #: id(session) -> [(call number, ResolvedRead)]
        self.reads: dict[int, list[tuple[int, Any]]] = {}
        self.edited: dict[int, dict[str, None]] = {}

    def __call__(self, session, outcome, call: ToolCall) -> None:
        key = id(session)
        self.n = self.calls[key] = self.calls.get(key, 0) + 1
        self.reads.setdefault(key, []).extend((self.n, r) for r in outcome.reads)
        self.edited.setdefault(key, {}).update(dict.fromkeys(outcome.edits))
        if self.out is not None:
            if key != self._last and (len(self.calls) > 1 or session.trace_info.instance_id):
                # a file holding several runs (OpenHands output.jsonl) names each one
                print(f"---- run {session.identity.instance_id}", file=self.out)
            self._print(outcome, call)
        self._last = key

    def _print(self, outcome, call: ToolCall) -> None:
        out = self.out
        mark = "S" if outcome.step is not None else " "
        head = f"{self.n:>4} {mark} {call.tool[:18]:<18} {outcome.category:<8} "
        print(head + describe_call(call, max(20, self.width - len(head))), file=out)
        listed = [r for r in outcome.reads if r.listing]
        for r in outcome.reads:
            if not r.listing:
                print(f"{'':>8}read  {describe_read(r)}", file=out)
        if listed:
            names = [r.repo_path or f"{r.trace_path} (not in repo)" for r in listed]
            shown = names if self.all_names or len(names) <= 3 else names[:3] + ["…"]
            print(f"{'':>8}list  {len(names)} name(s): {', '.join(shown)}", file=out)
        for path in outcome.edits:
            print(f"{'':>8}edit  {path}", file=out)
        for reason, msg in outcome.problems:
            print(f"{'':>8}note  {getattr(reason, 'value', reason)}: {msg}", file=out)


# ---------------------------------------------------------------------- summary


def _directories(reads) -> set[str]:
    """Names the run itself shows to be directories (module docstring)."""
    dirs: set[str] = {"."}
    for attr in ("trace_path", "repo_path"):
        names = {posixpath.normpath(p) for p in (getattr(r, attr) for _, r in reads) if p}
        dirs.update(p for p in (getattr(r, attr) for _, r in reads) if p and p.endswith("/"))
        for p in names:
            parent = posixpath.dirname(p)
            while parent and parent not in ("/", "."):
                dirs.add(parent)
                parent = posixpath.dirname(parent)
    return dirs


def _is_dir(r, dirs: set[str]) -> bool:
    return (r.repo_path.endswith("/") or posixpath.normpath(r.repo_path) in dirs
            or posixpath.normpath(r.trace_path) in dirs)


def run_summary(session, reads: list[tuple[int, Any]], edited, first: int) -> dict:
    """One run's summary: the numbers ``inspect`` prints and writes (see docs/inspect.md)."""
    snap = session.snapshot()
    with_repo = snap.has_repo
    in_repo = [(n, r) for n, r in reads if r.repo_path is not None]
    dirs = _directories(in_repo) if not with_repo else set()
    in_repo = [(n, r) for n, r in in_repo if not (dirs and _is_dir(r, dirs))]
    shown = [(n, r) for n, r in in_repo if not r.listing]
    read_files = sorted({r.repo_path for _, r in shown})
    listed_only = sorted({r.repo_path for _, r in in_repo if r.listing} - set(read_files))
    out: dict[str, Any] = {
        "run_id": snap.run_id,
        "instance_id": snap.instance_id,
        "repo": with_repo,
        "tool_calls": snap.tool_calls,
        "sidechain_calls": snap.sidechain_calls,
        "steps": snap.num_steps,
        "categories": dict(sorted(snap.categories.items())),
        "files_read": {"count": len(read_files), "files": read_files},
        "files_listed": {"count": len(listed_only), "files": listed_only},
        "distinct_files": len(read_files) + len(listed_only),
        "first_reads": [_read_json(n, r, with_repo) for n, r in shown[:max(0, first)]],
        "reads_outside_repo": sum(1 for _, r in reads if r.repo_path is None),
        "edits": snap.edits,
        "files_edited": sorted(edited),
        "shown_lines": dict(snap.shown_lines),
        "context_file_reads": dict(sorted(snap.context_file_reads.items())),
        "unparsed_lines": dict(sorted(snap.bad_lines.items())),
        "problems": dict(sorted(snap.problems.items())),
    }
    rec = session.record()
    if "error" in rec:
        out["metrics_error"] = rec["error"]
    else:
        out["metrics"] = {k: rec[k] for k in ("final", "trajectory", "editloc") if k in rec}
    return out


def _read_json(n: int, r, with_base: bool) -> dict:
    """``lines``: the window the call proposed, in current lines, first to last (None:
    not known, e.g. a whole ``cat`` without a repo); ``runs``, when the printed numbers
    have gaps (grep hits): the runs of lines shown; ``base`` (with a repo): the
    base-commit lines its text was aligned with; ``agent``: shown lines with no base
    counterpart; ``unaligned``: lines credited from the window alone (no text, or no
    repo)."""
    d: dict[str, Any] = {"call": n, "file": r.repo_path,
                         "lines": [r.current[0][0], r.current[-1][1]] if r.current else None}
    if len(r.current) > 1:
        d["runs"] = [list(w) for w in r.current]
    if with_base:
        d["base"] = [list(b) for b in r.base]
        d["agent"] = r.agent
        d["unaligned"] = r.unaligned
    return d


def summarize(trace: Path, fmt: str, lines: int, sessions, printer: CallTable,
              first: int = FIRST_READS) -> dict:
    """The whole ``--json`` document: the trace, then one summary per run."""
    runs = [run_summary(s, printer.reads.get(id(s), []), printer.edited.get(id(s), {}), first)
            for s in sessions]
    return {"trace": str(trace), "format": fmt, "lines": lines, "runs": runs}


def print_summary(out: TextIO, doc: dict) -> None:
    print(f"\nsummary: {doc['trace']}", file=out)
    print(f"  format       {doc['format']}", file=out)
    print(f"  lines        {doc['lines']}", file=out)
    print(f"  runs         {len(doc['runs'])}", file=out)
    for run in doc["runs"]:
        _print_run(out, run)


def _counts(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "none"


def _print_run(out: TextIO, run: dict) -> None:
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"\nrun {run['run_id']} instance {run['instance_id']}")
    p(f"  tool calls   {run['tool_calls']} (+{run['sidechain_calls']} in sub-agents, not scored)")
    p(f"  steps        {run['steps']}")
    p(f"  categories   {_counts(run['categories'])}")
    where = "repo files" if run["repo"] else "paths as the trace names them, no repo"
    p(f"  files read   {run['files_read']['count']} with lines shown, "
      f"{run['files_listed']['count']} more only listed ({where})")
    for r in run["first_reads"]:
        lines = fmt_ranges([r["lines"]]) if r["lines"] else "all"
        base = fmt_ranges(r.get("base") or [])
        base = f" -> base {base or '-'}" if "base" in r and base != lines else ""
        p(f"    #{r['call']:<4} {r['file']} lines {lines}{base}")
    p(f"  outside repo {run['reads_outside_repo']} read(s)")
    p(f"  edits        {run['edits']} ({len(run['files_edited'])} distinct files)")
    if run["context_file_reads"]:
        p(f"  context      {_counts(run['context_file_reads'])}")
    p(f"  unparsed     {_counts(run['unparsed_lines'])}")
    p(f"  problems     {_counts(run['problems'])}")
    if "metrics" in run:
        _print_metrics(out, run["metrics"])
    else:
        p(f"  metrics: not computed ({run['metrics_error']})")


def _print_metrics(out: TextIO, m: dict) -> None:
    print(f"  {'granularity':<12}{'coverage':>10}{'precision':>11}{'auc':>8}{'redundancy':>12}",
          file=out)
    for g in GRANULARITIES:
        f, t = m["final"][g], m["trajectory"]
        print(f"  {g:<12}{f['coverage']:>10.3f}{f['precision']:>11.3f}"
              f"{t['auc_coverage'][g]:>8.3f}{t['redundancy'][g]:>12.3f}", file=out)
    e = m.get("editloc")
    if e:
        # docs/metrics.md §4: hits among the patch's deleted lines; gold_size = init lines
        print(f"  editloc      recall {e['recall']:.3f} ({e['intersection']} of "
              f"{e['pred_size']} deleted lines in init context; {e['gold_size']} init lines)",
              file=out)
