"""``streameval outcomes RECORDS.jsonl|TRACES... [--outcomes PATH]``: which signals foretell
failure, and how early (docs/outcomes.md §5).

The runs are read as ``compare`` reads an arm (records files as replay writes them, or
traces scored here), ``--outcomes`` laid onto them; the analysis is ``report.outcomes``,
printed as text (``report.outcomes_text``) and written as JSON and a self-contained
HTML page (``report.outcomes_page``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from streameval.commands.options import (
    add_format,
    add_sources,
    positive_int,
    say_outcomes,
)
from streameval.commands.records_in import Replayer, load_input
from streameval.errors import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="PATH",
                   help="records files (replay's JSONL), or traces and directories of runs to "
                        "score here (with --repos/--repo, and --gold for gold signals)")
    p.add_argument("--steps", metavar="K[,K]",
                   help="the steps k of the early-warning curve (checkpoints: 5, 10, 15, 20, "
                        "30, 40, 60, 80, ...; default 5, 10, 20, 40, ... while 10 runs reach "
                        "the step)")
    p.add_argument("--bins", type=positive_int, default=4, metavar="N",
                   help="quantile bins of the solve rate by signal (default %(default)s)")
    p.add_argument("--unit", choices=("repository", "instance"), default="repository",
                   help="what the intervals treat as independent: repositories (default; "
                        "with 2 or fewer, instance-level, labelled), or instances")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the report as JSON")
    p.add_argument("--html", metavar="FILE",
                   help="write a self-contained page: the early-warning curve of every signal "
                        "and its solve rate by bin, drawn as SVG")
    p.add_argument("--quiet", action="store_true", help="no table on stdout")
    add_sources(p)
    add_format(p)
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="worker processes when traces are scored")


def _steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        steps = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--steps wants numbers like 5,10,20, got {text!r}") from None
    if not steps or steps[0] < 1:
        raise UsageError(f"--steps wants steps of 1 or more, got {text!r}")
    return steps


def run(args: argparse.Namespace) -> int:
    """Exit code: 0; 2 for a usage error (no run with an outcome, an ``--outcomes`` file
    that names none of the runs, a step that is no checkpoint)."""
    from streameval.report.outcomes import analyse
    from streameval.report.outcomes_page import format_html
    from streameval.report.outcomes_text import format_text

    steps = _steps(args.steps)
    replayer = Replayer(args)
    try:
        records = [r for p in args.inputs for r in load_input(Path(p), replayer)]
    finally:
        replayer.close()
    if not say_outcomes("outcomes", replayer.outcomes, records, args.quiet):
        return 2
    if not any(isinstance(r.get("resolved"), bool) for r in records):
        raise UsageError(f"none of the {len(records)} run(s) has an outcome: give --outcomes "
                         "PATH (a harness log directory, its summary, or rows of "
                         "instance_id, resolved), or resolved in meta.json")
    try:
        report = analyse(records, steps, args.bins, args.unit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not args.quiet:
        sys.stdout.write(format_text(report))
    if args.json_out:
        Path(args.json_out).write_bytes(orjson.dumps(report.to_json(),
                                                     option=orjson.OPT_INDENT_2) + b"\n")
    if args.html:
        Path(args.html).write_text(format_html(report))
    return 0
