"""``streameval inspect TRACE``: how a user debugs an adapter.

Prints every tool call with its category and the reads/edits inferred from it (file,
lines as shown, base-commit lines after edit mapping), then a summary per run; with
gold and a repo, the metrics too. ``--json FILE`` writes the same summary as JSON, so
golden tests and scripts read the numbers instead of scraping the table. It goes
through the same ``session`` engine as replay and watch, so what it shows is what
they score.

"Files read" in the summary are the files whose *lines* were shown; files only named
by a listing (``ls``, ``find``, Glob, ``grep -l``) are counted apart. Without a repo
nothing says which listed names are directories, so a name is taken for a directory
only when the trace itself shows it: it ends with ``/``, it is the workspace root
(``.``), or another path of the same run lies under it (SWE-agent's ``view /testbed``
prints ``/testbed/xarray`` and then ``/testbed/xarray/core.py``). With a repo every
name is checked against the base commit's files instead.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import sys
from pathlib import Path
from typing import Any, TextIO

from streameval.model import GRANULARITIES, ToolCall

#: reads listed in the summary (and written to --json) per run
FIRST_READS = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    from streameval.commands.options import add_format, add_sources, positive_int

    p.add_argument("trace", type=Path, metavar="FILE", help="a trace file (any known format)")
    add_sources(p, gold_required=False)
    add_format(p)
    p.add_argument("--commit", metavar="REV",
                   help="with --repo and no gold: the commit to read files at (HEAD when not "
                        "given; with gold, the gold's base commit)")
    p.add_argument("--instance", metavar="ID",
                   help="instance id (when not given: meta.json, or the directory name)")
    p.add_argument("--width", type=positive_int, default=160, metavar="N",
                   help="table width in characters")
    p.add_argument("--json", dest="json_out", metavar="FILE",
                   help="also write the summary as JSON to FILE ('-' for stdout, table then "
                        "goes to stderr)")
    p.add_argument("--first", type=positive_int, default=FIRST_READS, metavar="N",
                   help="how many first reads the summary lists")
    p.add_argument("--all-names", action="store_true",
                   help="print every name of a listing in the table (otherwise the first 3)")
    p.add_argument("--quiet", "-q", action="store_true", help="summary only, no per-call table")


# ---------------------------------------------------------------------- formatting


def _fmt_ranges(ranges) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def _describe_read(r) -> str:
    """``file lines <proposed> -> base <credited>`` and what the text said: shown lines
    that are the agent's own, or lines credited from the window alone."""
    name = r.repo_path or f"{r.trace_path} (not in repo)"
    if r.repo_path is None:
        return name
    shown = _fmt_ranges(r.current) if r.current else "?"
    base = _fmt_ranges(r.base) if r.base else "-"
    text = f"{name} lines {shown}" + (f" -> base {base}" if base != shown else "")
    notes = []
    if r.agent:
        notes.append(f"{r.agent} shown line(s) the agent's own")
    if r.unaligned:
        notes.append("window as asked, text not checked")
    elif not r.base and r.by_text and not r.agent:
        notes.append("text matched no line")
    elif not r.base and not r.by_text:
        notes.append("which lines is not known without the repository")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def describe_call(call: ToolCall | None, width: int) -> str:
    """The call's most telling input on one line: command, path or pattern
    (also the last column of ``replay --live``'s table)."""
    if call is None:
        return ""
    inp = call.input or {}
    text = ""
    # what the call does before where: a Grep is its pattern (then its path)
    for key in ("command", "cmd", "pattern", "query", "file_path", "path", "input"):
        value = inp.get(key)
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            value = " ".join(value)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            path = inp.get("path")
            if key in ("command", "pattern", "query") and isinstance(path, str) \
                    and path not in text:
                text = f"{text} {path}"   # editor calls: "view /testbed/x.py"
            break
    return text if len(text) <= width else text[: width - 1] + "…"


class _Printer:
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
                print(f"{'':>8}read  {_describe_read(r)}", file=out)
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
    ex = session.extras
    in_repo = [(n, r) for n, r in reads if r.repo_path is not None]
    dirs = _directories(in_repo) if session.view is None else set()
    in_repo = [(n, r) for n, r in in_repo if not (dirs and _is_dir(r, dirs))]
    shown = [(n, r) for n, r in in_repo if not r.listing]
    read_files = sorted({r.repo_path for _, r in shown})
    listed_only = sorted({r.repo_path for _, r in in_repo if r.listing} - set(read_files))
    ident = session.identity
    out: dict[str, Any] = {
        "run_id": ident.run_id,
        "instance_id": ident.instance_id,
        "repo": session.view is not None,
        "tool_calls": ex.tool_calls,
        "sidechain_calls": ex.sidechain_calls,
        "steps": session.num_steps,
        "categories": dict(sorted(ex.categories.items())),
        "files_read": {"count": len(read_files), "files": read_files},
        "files_listed": {"count": len(listed_only), "files": listed_only},
        "distinct_files": len(read_files) + len(listed_only),
        "first_reads": [_read_json(n, r, session.view is not None)
                        for n, r in shown[:max(0, first)]],
        "reads_outside_repo": sum(1 for _, r in reads if r.repo_path is None),
        "edits": ex.edits,
        "files_edited": sorted(edited),
        "shown_lines": {"aligned": ex.lines_aligned, "agent_written": ex.lines_agent_written,
                        "unaligned": ex.lines_unaligned},
        "context_file_reads": dict(sorted(ex.context_file_reads.items())),
        "unparsed_lines": dict(sorted(ex.bad_lines.items())),
        "problems": dict(sorted(ex.problems.items())),
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


def summarize(trace: Path, fmt: str, lines: int, sessions, printer: _Printer,
              first: int = FIRST_READS) -> dict:
    """The whole ``--json`` document: the trace, then one summary per run."""
    runs = [run_summary(s, printer.reads.get(id(s), []), printer.edited.get(id(s), {}), first)
            for s in sessions]
    return {"trace": str(trace), "format": fmt, "lines": lines, "runs": runs}


def _print_summary(out: TextIO, doc: dict) -> None:
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
        lines = _fmt_ranges([r["lines"]]) if r["lines"] else "all"
        base = _fmt_ranges(r.get("base") or [])
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


# ---------------------------------------------------------------------- running


def _session_factory(args, res, fmt: str, printer: _Printer, plain):
    """Sessions with gold and repo when both are given; else a plain view (``--repo``
    at ``--commit``) so that paths are still repo paths and lines are clamped."""
    from streameval.runs.evaluate import make_session, run_identity
    from streameval.scoring.session import RunSession
    from streameval.traces.identity import identify

    identity = identify(args.trace, args.instance)
    n_runs = [0]

    def factory(trace_instance: str | None, session_id: str | None) -> RunSession:
        ident = run_identity(identity, trace_instance, n_runs[0], res,
                             explicit=args.instance is not None, trace=args.trace,
                             session_id=session_id)
        n_runs[0] += 1
        if res.gold is not None and (args.repos or args.repo):
            s = make_session(res, ident, fmt)
            if s.view is None and plain is not None:
                s = RunSession(ident, None, plain, fmt=fmt, error=s.error, tools=res.tools)
        else:
            s = RunSession(ident, None, plain, fmt=fmt, tools=res.tools,
                           error="no gold given" if res.gold is None else "no repository given")
        s.listeners.append(printer)
        return s

    return factory


def _plain_view(args):
    """``--repo`` at ``--commit`` (HEAD) for display; raises RepoError/OSError."""
    from streameval.sources.repocache import open_repo

    return open_repo(Path(args.repo)).at(args.commit)


def run(args: argparse.Namespace) -> int:
    from streameval.commands.options import resources
    from streameval.errors import StreamevalError
    from streameval.runs.evaluate import TraceReader, iter_lines, land_file_patch, open_adapter
    from streameval.traces.identity import patch_beside

    to_stdout = args.json_out == "-"
    out = sys.stderr if to_stdout else sys.stdout
    try:
        fmt, adapter = open_adapter(args.trace, args.fmt)
        res = resources(args)
        plain = _plain_view(args) if args.repo else None
    except (StreamevalError, OSError) as exc:
        print(f"streameval inspect: {exc}", file=sys.stderr)
        return 2
    printer = _Printer(None if args.quiet else out, args.width, args.all_names)
    if not args.quiet:
        print(f"{'#':>4} S {'tool':<18} {'category':<8} input   (S = a step: showed repo code)",
              file=out)
    reader = TraceReader(adapter, _session_factory(args, res, fmt, printer, plain))
    lines = 0
    try:
        for line, lineno in iter_lines(args.trace):
            lines = lineno
            reader.feed_line(line, lineno)
    except OSError as exc:
        print(f"streameval inspect: {args.trace}: {exc}", file=sys.stderr)
        return 2
    sessions = reader.close()
    land_file_patch(sessions, patch_beside(args.trace))  # as replay lands it: same EditLoc
    doc = summarize(args.trace, fmt, lines, sessions, printer, args.first)
    _print_summary(out, doc)
    if args.json_out:
        return _write_json(doc, args.json_out)
    return 0


def _write_json(doc: dict, dest: str) -> int:
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return 0
    try:
        Path(dest).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"streameval inspect: cannot write {dest}: {exc}", file=sys.stderr)
        return 2
    return 0


__all__ = ["add_arguments", "describe_call", "run", "run_summary", "summarize", "FIRST_READS"]
