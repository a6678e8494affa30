"""The ``streameval`` command: parse arguments, hand over to the room that does the work.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; this file only wires them, so it stays under a screen.
"""

from __future__ import annotations

import argparse
import importlib

from streameval import __version__
from streameval.commands.options import Formatter, Parser
from streameval.errors import Interrupted, UsageError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("streameval.commands.replay", "score recorded traces or unified predictions (JSONL out)"),
    "inspect": ("streameval.commands.inspect", "show the tool calls, reads and edits inferred from one trace"),
    "watch": ("streameval.commands.watch", "follow running agents' traces and serve Prometheus metrics"),
    "view": ("streameval.commands.view", "the page over recorded runs: served, or one HTML file"),
    "demo": ("streameval.commands.demo", "play the bundled example run live with metrics served"),
    "abort-backtest": ("streameval.commands.abort_backtest", "replay traces through abort policies and report"),
    "compare": ("streameval.commands.compare", "compare agents or conditions on paired instances, with error bars"),
    "outcomes": ("streameval.commands.outcomes", "which live signals foretell failure, and how early (needs outcomes)"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """All commands' options, or with ``only`` that command's alone: the others are listed
    but not imported, so that ``replay`` does not load the watcher, its server and the page
    (a third of a short replay's time went to importing them)."""
    parser = Parser(
        prog="streameval",
        description="Score coding agents while they run: ContextBench context metrics from "
                    "agent traces, live as Prometheus metrics or replayed as JSONL records.")
    parser.add_argument("--version", action="version", version=f"streameval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_, formatter_class=Formatter)
        if only is not None and name != only:
            continue
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    import sys

    given = sys.argv[1:] if argv is None else argv
    # the command is the first word that is no option (the top level takes no values)
    first = next((a for a in given if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UsageError as exc:  # a setting that cannot work: one line, exit 2
        print(f"streameval {args.command}: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:   # Ctrl-C where the command said what it kept
        print(f"streameval {args.command}: interrupted: {exc}", file=sys.stderr, flush=True)
        return 130
    except KeyboardInterrupt:   # Ctrl-C before the command had kept anything
        print(f"streameval {args.command}: interrupted: nothing written", file=sys.stderr,
              flush=True)
        return 130
    except BrokenPipeError:  # `streameval replay ... | head`
        return 0
