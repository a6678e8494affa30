"""``streameval inspect TRACE``: how a user debugs an adapter.

Prints every tool call with its category and the reads/edits inferred from it (file,
lines as shown, base-commit lines after edit mapping), then a summary per run; with
gold and a repo, the metrics too. ``--json FILE`` writes the same summary as JSON, so
golden tests and scripts read the numbers instead of scraping the table. It goes
through the same ``session`` engine as replay and watch, so what it shows is what
they score.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from streameval.commands.options import add_format, add_sources, positive_int, resources
from streameval.errors import StreamevalError
from streameval.report.inspect import (
    FIRST_READS,
    CallTable,
    print_summary,
    summarize,
)
from streameval.runs.evaluate import land_file_patch, make_session, run_identity
from streameval.runs.reader import TraceReader
from streameval.scoring.session import RunSession
from streameval.sources.repocache import open_repo
from streameval.traces.files import iter_marked_lines, open_adapter
from streameval.traces.identity import identify, patch_beside


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", type=Path, metavar="FILE", help="a trace file (any known format)")
    add_sources(p, outcomes=False)
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


def _session_factory(args, res, fmt: str, printer: CallTable, plain):
    """Sessions with gold and repo when both are given; else a plain view (``--repo``
    at ``--commit``) so that paths are still repo paths and lines are clamped."""

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

    return open_repo(Path(args.repo)).at(args.commit)


def run(args: argparse.Namespace) -> int:
    to_stdout = args.json_out == "-"
    out = sys.stderr if to_stdout else sys.stdout
    try:
        fmt, adapter = open_adapter(args.trace, args.fmt)
        res = resources(args)
        plain = _plain_view(args) if args.repo else None
    except (StreamevalError, OSError) as exc:
        print(f"streameval inspect: {exc}", file=sys.stderr)
        return 2
    scored = res.gold is not None and bool(args.repos or args.repo)
    # --repo without the base commit (no gold to name it, no --commit): read at HEAD
    read_at = None if scored or not args.repo else (args.commit or "HEAD")
    printer = CallTable(None if args.quiet else out, args.width, args.all_names,
                        coverage=scored, base_known=read_at != "HEAD")
    printer.head()
    reader = TraceReader(adapter, _session_factory(args, res, fmt, printer, plain))
    lines = 0
    try:
        for line, lineno, cut in iter_marked_lines(args.trace):
            lines = lineno
            reader.feed_line(line, lineno, unterminated=cut)
    except OSError as exc:
        print(f"streameval inspect: {args.trace}: {exc}", file=sys.stderr)
        return 2
    sessions = reader.close()
    land_file_patch(sessions, patch_beside(args.trace))  # as replay lands it: same EditLoc
    doc = summarize(args.trace, fmt, lines, sessions, printer, args.first,
                    res=res if scored else None, read_at=read_at)
    print_summary(out, doc)
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


__all__ = ["add_arguments", "run"]
