"""``streameval compare``: two or more arms, paired by instance, with honest error bars.

The options; then each arm's records (a records file as replay writes it, or traces and
predictions replayed here with the same engine), the arms reduced and compared
(``report.arms``, ``report.compare``), the table printed, JSON / markdown / HTML written,
and the ``--fail-if-worse`` gates checked (docs/compare.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from streameval.commands.options import (
    add_format,
    add_labels,
    add_sources,
    non_negative_float,
    non_negative_int,
    positive_int,
    say_outcomes,
)
from streameval.commands.records_in import Replayer, load_input
from streameval.errors import UsageError
from streameval.report.arms import reduce_arm, split_records
from streameval.report.compare import MISSING_MARGIN
from streameval.report.fields import select_metrics
from streameval.report.gate import GateError, WorseGate, fail_if_worse, parse_worse
from streameval.report.inference import DEFAULT_FLIPS

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="*", metavar="PATH",
                   help="with --by: records files (replay's JSONL) or traces and predictions "
                        "to replay, split into arms by --by")
    p.add_argument("--arm", action="append", default=None, metavar="NAME=PATH",
                   help="an arm and its records file, trace file or directory (repeatable; "
                        "a NAME given twice gathers both paths); the first is the baseline A")
    p.add_argument("--by", metavar="KEY",
                   help="split the inputs' runs into arms by experiment, agent, model or "
                        "label:KEY")
    p.add_argument("--baseline", metavar="NAME", help="the arm the others are compared with "
                   "(default: the first --arm, or the first --by value in sorted order)")
    p.add_argument("--metrics", metavar="GLOB[,GLOB]",
                   help="the metrics to compare, e.g. 'line.*,*.f1,tokens' (default: all; "
                        "Holm's correction is over the ones shown)")
    p.add_argument("--unit", choices=("repository", "instance"), default="repository",
                   help="what the intervals and p-values treat as independent: repositories "
                        "(default; a metric with 2 or fewer gets an instance-level interval, "
                        "labelled, never trusted and never gating), or instances (the result "
                        "then speaks for these repositories' tasks only: never trusted, "
                        "though gates judge it)")
    p.add_argument("--missing", choices=("drop", "worst"), default="drop",
                   help="instances one arm scored and the other did not: left out (default), "
                        "or scored as the worst value either arm had, for a sensitivity run")
    p.add_argument("--missing-margin", type=non_negative_float, default=MISSING_MARGIN, metavar="POINTS",
                   help="an arm that has no score for more than this many percentage points "
                        "more of the instances than the baseline fails --fail-if-worse "
                        "(default %(default)g)")
    p.add_argument("--resamples", type=positive_int, default=DEFAULT_FLIPS, metavar="N",
                   help="random sign flips of the p-value's flip test when a metric has more "
                        "than 12 units (up to 12, every flip is counted); its p cannot go "
                        "below 1/(1+N)")
    p.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                   help="seed of the random flips (the same seed gives the same p-values)")
    p.add_argument("--json", dest="json_out", metavar="FILE", help="write the report as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the report as markdown")
    p.add_argument("--html", metavar="FILE",
                   help="write a self-contained page: the tables and each arm's coverage "
                        "curve per step with its band")
    p.add_argument("--fail-if-worse", action="append", default=None, metavar="METRIC[:MARGIN]",
                   help="exit 1 when an arm is worse than the baseline on METRIC by more than "
                        "MARGIN (one-sided test at 2.5%%, Holm-corrected over the gates), or "
                        "lost more instances than --missing-margin allows (repeatable, or "
                        "comma-separated)")
    p.add_argument("--quiet", action="store_true", help="no table on stdout")
    add_sources(p)
    add_labels(p)
    add_format(p)
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="worker processes when traces are replayed")


# --------------------------------------------------------------------------- arms


def _arms(args: argparse.Namespace, replayer: Replayer
          ) -> tuple[dict[str, list[dict[str, Any]]], int]:
    args.arm = args.arm or []
    if bool(args.arm) == bool(args.by):
        raise UsageError("give two or more --arm NAME=PATH, or input paths and --by KEY")
    if args.arm:
        if args.inputs:
            raise UsageError("with --arm, give each arm's paths in its --arm (no other paths)")
        arms: dict[str, list[dict[str, Any]]] = {}
        for spec in args.arm:
            name, sep, path = spec.partition("=")
            if not sep or not name.strip() or not path:
                raise UsageError(f"--arm wants NAME=PATH, got {spec!r}")
            arms.setdefault(name.strip(), []).extend(load_input(Path(path), replayer))
        return arms, 0
    if not args.inputs:
        raise UsageError("--by splits the runs of the input paths: give some")
    records = [r for p in args.inputs for r in load_input(Path(p), replayer)]
    try:
        by_arm, unnamed = split_records(records, args.by)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return dict(sorted(by_arm.items())), unnamed


def _ordered(arms: dict[str, Any], baseline: str | None) -> list[str]:
    names = list(arms)
    if baseline is not None:
        if baseline not in arms:
            raise UsageError(f"--baseline {baseline!r} is not an arm; arms: {', '.join(names)}")
        names.remove(baseline)
        names.insert(0, baseline)
    if len(names) < 2:
        raise UsageError(f"a comparison needs two arms or more; found: {', '.join(names) or 'none'}")
    return names


def _gates(args: argparse.Namespace, metrics) -> list[WorseGate]:
    gates: list[WorseGate] = []
    for text in args.fail_if_worse or ():
        try:
            gates.extend(parse_worse(text))
        except GateError as exc:
            raise UsageError(str(exc)) from None
    shown = {m.name for m in metrics}
    for g in gates:
        if g.name not in shown:
            raise UsageError(f"--fail-if-worse {g.name}: not among the compared metrics "
                             "(see --metrics)")
    return gates


# --------------------------------------------------------------------------- running


def run(args: argparse.Namespace) -> int:
    """Exit code: 0, 1 when a --fail-if-worse gate fails, 2 for a usage error (an
    ``--outcomes`` file that names none of the runs among them)."""
    from streameval.report.compare import compare_arms, report_json
    from streameval.report.compare_page import format_html
    from streameval.report.compare_text import format_markdown, format_terminal

    try:
        metrics = select_metrics(args.metrics.split(",") if args.metrics else None)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    gates = _gates(args, metrics)
    replayer = Replayer(args)
    try:
        arms, unnamed = _arms(args, replayer)
    finally:
        replayer.close()
    if not say_outcomes("compare", replayer.outcomes,
                        [r for runs in arms.values() for r in runs], args.quiet):
        return 2
    names = _ordered(arms, args.baseline)
    reduced = [reduce_arm(n, arms[n], metrics) for n in names]
    report = compare_arms(reduced, metrics, unit=args.unit, missing=args.missing,
                          missing_margin=args.missing_margin, flips=args.resamples,
                          seed=args.seed, unnamed=unnamed)
    if not args.quiet:
        sys.stdout.write(format_terminal(report))
    for path, text in ((args.json_out, lambda: orjson.dumps(
            report_json(report), option=orjson.OPT_INDENT_2).decode() + "\n"),
                       (args.markdown, lambda: format_markdown(report)),
                       (args.html, lambda: format_html(report))):
        if path:
            try:
                Path(path).write_text(text(), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    verdict = fail_if_worse(report, gates)
    for line in verdict.notes:
        print(f"streameval compare: --fail-if-worse: note: {line}", file=sys.stderr)
    for line in verdict.failures:
        print(f"streameval compare: --fail-if-worse: {line}", file=sys.stderr)
    return 1 if verdict.failures else 0
