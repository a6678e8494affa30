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
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from streameval.model import GRANULARITIES, ToolCall
from streameval.reading.describe import describe_call, describe_read, fmt_ranges
from streameval.report.goldview import gold_files
from streameval.report.journal import RunJournal

#: reads listed in the summary (and written to --json) per run
FIRST_READS = 10
HEAD_WARNING = ("the repository was read at HEAD (--repo without --gold or --commit), which "
                "may not be the commit the agent worked on: lines that match no line there "
                "are not called the agent's own, and paths and edits are those of HEAD")


#: the per-step coverage column: after each step, file symbol span line
COVERAGE_HEAD = "coverage f/sym/span/line"


class CallTable:
    """The per-call table; also remembers every read per run for the summary, and keeps
    each run's journal (``report.journal``: its curve, what each gold file was credited).

    ``coverage``: the runs are scored (gold and repository), so each step shows the
    per-step coverage after it. ``base_known``: the repository is read at the run's base
    commit; when it is not (``--repo`` at HEAD), a shown line that matches no line there
    is not called the agent's own.
    """

    def __init__(self, out: TextIO | None, width: int, all_names: bool = False,
                 coverage: bool = False, base_known: bool = True):
        self.out, self.width, self.all_names = out, width, all_names
        self.coverage, self.base_known = coverage, base_known
        self.n = 0
        self._last: int | None = None
        self._headed = False
        #: id(session) -> calls seen in that run (reads are numbered per run)
        self.calls: dict[int, int] = {}
        #: id(session) -> [(call number, ResolvedRead)]
        self.reads: dict[int, list[tuple[int, Any]]] = {}
        self.edited: dict[int, dict[str, None]] = {}
        #: id(session) -> its journal (no call rows: the table prints them)
        self.journals: dict[int, RunJournal] = {}

    def head(self) -> None:
        """The table's header line (printed once, before the first row)."""
        if self.out is None or self._headed:
            return
        self._headed = True
        cov = f"{COVERAGE_HEAD:<24} " if self.coverage else ""
        print(f"{'#':>4} {'S':<4} {'tool':<18} {'category':<8} {cov}input   "
              "(S<n> = step n: the call showed repo code)", file=self.out)

    def __call__(self, session, outcome, call: ToolCall) -> None:
        key = id(session)
        self.n = self.calls[key] = self.calls.get(key, 0) + 1
        self.reads.setdefault(key, []).extend((self.n, r) for r in outcome.reads)
        self.edited.setdefault(key, {}).update(dict.fromkeys(outcome.edits))
        journal = self.journals.setdefault(key, RunJournal(max_calls=0))
        journal(session, outcome, call)
        if self.out is not None:
            self.head()
            if key != self._last and (len(self.calls) > 1 or session.trace_info.instance_id):
                # a file holding several runs (OpenHands output.jsonl) names each one
                print(f"---- run {session.identity.instance_id}", file=self.out)
            cov = None
            if journal.last_step is not None and self.coverage:
                scores = session.snapshot().scores   # the coverage after this step
                if scores is not None:
                    cov = tuple(scores.last_step_coverage.get(g, 0.0) for g in GRANULARITIES)
            self._print(outcome, call, journal.last_step, cov)
        self._last = key

    def _describe(self, r) -> str:
        if self.base_known or not r.agent:
            return describe_read(r)
        # not the base commit: a line that matches nothing there is not known to be the
        # agent's own (it may be the base commit's own line, changed since)
        return (describe_read(replace(r, agent=0)) + f" ({r.agent} shown line(s) match no "
                "line of the commit read, which may not be the run's base commit)")

    def _print(self, outcome, call: ToolCall, step: int | None, cov) -> None:
        out = self.out
        mark = f"S{step}" if outcome.step is not None else ""
        head = f"{self.n:>4} {mark:<4} {call.tool[:18]:<18} {outcome.category:<8} "
        if self.coverage:
            head += f"{' '.join(f'{v:.2f}' for v in cov) if cov else '':<24} "
        print(head + describe_call(call, max(20, self.width - len(head))), file=out)
        listed = [r for r in outcome.reads if r.listing]
        for r in outcome.reads:
            if not r.listing:
                print(f"{'':>8}read  {self._describe(r)}", file=out)
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


def run_summary(session, reads: list[tuple[int, Any]], edited, first: int,
                journal: RunJournal | None = None, gold=None, read_at: str | None = None) -> dict:
    """One run's summary: the numbers ``inspect`` prints and writes (see docs/inspect.md).

    ``gold`` (the run's gold row, when it is scored) adds the gold not credited, with why,
    from ``journal``. ``read_at``: the commit a repository without gold was read at
    (``HEAD`` unless ``--commit``): the edits are then counted there, not as the record
    counts them, and with ``HEAD`` no shown line is called the agent's own.
    """
    snap = session.snapshot()
    base_known = read_at != "HEAD"
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
        "first_reads": [_read_json(n, r, with_repo, base_known) for n, r in shown[:max(0, first)]],
        "reads_outside_repo": sum(1 for _, r in reads if r.repo_path is None),
        "edits": snap.edits,
        "files_edited": sorted(edited),
        "shown_lines": _shown_lines(snap.shown_lines, base_known),
        "context_file_reads": dict(sorted(snap.context_file_reads.items())),
        "unparsed_lines": dict(sorted(snap.bad_lines.items())),
        "problems": dict(sorted(snap.problems.items())),
    }
    rec = session.record()
    if "error" in rec:
        out["metrics_error"] = rec["error"]
        # the same count as a record, only where a record is made: without one, say how
        # this one was counted (a record counts repository files at the base commit)
        out["edits_as"] = (f"repository at {read_at}" if read_at else
                           "repository at its base commit" if with_repo else "paths as the trace names them")
    else:
        out["edits_as"] = "record"   # the same session made it: the record's count
        out["metrics"] = {k: rec[k] for k in ("final", "trajectory", "editloc") if k in rec}
        if gold is not None:
            out.update(gold_summary(gold, journal))
    return out


def _shown_lines(shown: dict, base_known: bool) -> dict:
    if base_known:
        return dict(shown)
    # at HEAD, a line matching nothing may be the base commit's own: not the agent's
    return {"aligned": shown["aligned"], "unmatched": shown["agent_written"],
            "unaligned": shown["unaligned"]}


def gold_summary(gold, journal: RunJournal | None) -> dict:
    """The gold files, and each gold range no step credited with why (``goldview``)."""
    files = gold_files(gold, journal, {}, {})
    missed = [{"file": f["file"], **u} for f in files for u in f["uncredited"]]
    return {"gold_files": len(files), "gold_not_credited": missed}


def _read_json(n: int, r, with_base: bool, base_known: bool = True) -> dict:
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
        d["agent" if base_known else "unmatched"] = r.agent
        d["unaligned"] = r.unaligned
    return d


def summarize(trace: Path, fmt: str, lines: int, sessions, printer: CallTable,
              first: int = FIRST_READS, res=None, read_at: str | None = None) -> dict:
    """The whole ``--json`` document: the trace, then one summary per run. ``res``: the
    gold the runs were scored with; ``read_at``: see ``run_summary``."""
    runs = []
    for s in sessions:
        gold = res.lookup(s.identity.instance_id) if res is not None else None
        runs.append(run_summary(s, printer.reads.get(id(s), []), printer.edited.get(id(s), {}),
                                first, printer.journals.get(id(s)), gold, read_at))
    doc = {"trace": str(trace), "format": fmt, "lines": lines, "runs": runs}
    if read_at == "HEAD":
        doc["warning"] = HEAD_WARNING
    return doc


def print_summary(out: TextIO, doc: dict) -> None:
    if "warning" in doc:
        print(f"\nwarning: {doc['warning']}", file=out)
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
        # the lines shown: grep hits (``runs``) as hits, never their first-to-last span,
        # which beside the base lines would read as an edit moving them
        lines = fmt_ranges(r.get("runs") or [r["lines"]]) if r["lines"] else "all"
        base = fmt_ranges(r.get("base") or [])
        base = f" -> base {base or '-'}" if "base" in r and base != lines else ""
        p(f"    #{r['call']:<4} {r['file']} lines {lines}{base}")
    p(f"  outside repo {run['reads_outside_repo']} read(s)")
    how = ("as the record counts them" if run["edits_as"] == "record" else
           f"{run['edits_as']}, not a record's count: give --gold and --repo")
    p(f"  edits        {run['edits']} ({len(run['files_edited'])} distinct files; {how})")
    if run["context_file_reads"]:
        p(f"  context      {_counts(run['context_file_reads'])}")
    p(f"  unparsed     {_counts(run['unparsed_lines'])}")
    p(f"  problems     {_counts(run['problems'])}")
    if "metrics" in run:
        _print_metrics(out, run["metrics"])
    else:
        p(f"  metrics: not computed ({run['metrics_error']})")
    if "gold_not_credited" in run:
        missed = run["gold_not_credited"]
        p(f"  gold         {run['gold_files']} file(s); "
          + (f"{len(missed)} range(s) never credited:" if missed else "every gold line credited"))
        for m in missed:
            p(f"    {m['file']} lines {fmt_ranges([m['lines']])}: {m['why']}")


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
