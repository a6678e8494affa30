"""The options the commands share, each stated once, and the checks that turn a bad
value into a one-line usage error (exit code 2) instead of a traceback or a hang.

Every command's ``--help`` shows the same names, placeholders (``FILE``, ``DIR``,
``PATH``, ``N``, ``SECONDS``) and defaults because they all come from here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

from streameval import config
from streameval.runs.resources import load_resources

GRAMMAR_CHOICES = ("contextbench", "official")
#: the help of every command's --tool-map option
TOOL_MAP_HELP = ("TOML map of tools that show code and streameval does not know by name "
                 "(MCP servers): docs/metrics.md §6b, examples/tool-map.toml")


class Parser(argparse.ArgumentParser):
    """argparse, with errors on one line: what is wrong and where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default (when it has one) after its help."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action) or text


# --------------------------------------------------------------------------- value checks

def _number(kind: type, text: str, low: float | None, what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value != value or (low is not None and value < low):  # NaN, or below the floor
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_int(text: str) -> int:
    return _number(int, text, 1, "a whole number >= 1")


def non_negative_int(text: str) -> int:
    return _number(int, text, 0, "a whole number >= 0")


def positive_float(text: str) -> float:
    value = _number(float, text, None, "a number > 0")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def non_negative_float(text: str) -> float:
    value = _number(float, text, 0, "a number >= 0")
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def port_number(text: str) -> int:
    """0-65535; 0 asks the system for any free port."""
    value = _number(int, text, 0, "a port number (0-65535)")
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return value


# --------------------------------------------------------------------------- shared options

def add_gold(p: argparse.ArgumentParser, required: bool = True) -> None:
    """``--gold``, and ``--gold-from-patch`` with ``--patch-context``: one of the two is
    needed when gold is (``check_gold``), so neither is required by argparse itself."""
    p.add_argument("--gold", metavar="PATH",
                   help="gold context: parquet, JSON or JSONL file, or a directory of annot.json"
                        + (" (this or --gold-from-patch is required)" if required else ""))
    p.add_argument("--gold-from-patch", metavar="FILE",
                   help="reference patches (JSONL or parquet of instance_id, patch, and "
                        "repo, base_commit): the base lines each patch changes are the gold "
                        "of instances --gold does not name (docs/metrics.md §1b)")
    p.add_argument("--patch-context", type=non_negative_int, default=0, metavar="N",
                   help="with --gold-from-patch: widen each changed run by N lines")
    p.set_defaults(_gold_required=required)


def check_gold(args: argparse.Namespace) -> None:
    """A UsageError when gold is needed and neither --gold nor --gold-from-patch is given."""
    from streameval.errors import UsageError

    if getattr(args, "_gold_required", False) and not (
            getattr(args, "gold", None) or getattr(args, "gold_from_patch", None)):
        raise UsageError("give --gold FILE or --gold-from-patch FILE")


def add_labels(p: argparse.ArgumentParser) -> None:
    """``--label key=value`` and ``--label-from-path TEMPLATE`` (traces.labels)."""
    p.add_argument("--label", action="append", default=None, metavar="KEY=VALUE",
                   help="label every run (repeatable); experiment=NAME sets the run's "
                        "experiment; overrides meta.json and the path")
    p.add_argument("--label-from-path", metavar="TEMPLATE",
                   help="labels from each trace's path, e.g. 'runs/{experiment}/{instance}': "
                        "{name} takes one path component (matched at the end of the trace's "
                        "directory, else of its path)")


def add_repos(p: argparse.ArgumentParser | Any) -> None:
    p.add_argument("--repos", metavar="DIR",
                   help="directory of repositories, git clones named owner__repo")
    p.add_argument("--repo", metavar="DIR",
                   help="one repository for every trace (a git clone, or a plain directory: "
                        "commits ignored)")


def add_tool_map(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tool-map", metavar="FILE", help=TOOL_MAP_HELP)


def add_grammars(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grammars", choices=GRAMMAR_CHOICES, default=None,
                   help="tree-sitter grammars for symbols: the public evaluator's "
                        "(tree-sitter-languages 1.10.2, extra streameval[contextbench]) or "
                        "the official wheels (default: contextbench when installed)")


def add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt", metavar="NAME",
                   help="trace format for every file, overriding detection (claude, codex, "
                        "miniswe, sweagent, openhands, unified, ...)")


def add_server(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", metavar="HOST", default=config.host(),
                   help="address /metrics binds (STREAMEVAL_HOST)")
    p.add_argument("--port", metavar="PORT", type=port_number, default=config.port(),
                   help="port of /metrics (STREAMEVAL_PORT; 0 = any free port)")


def add_sources(p: argparse.ArgumentParser, gold_required: bool = True) -> None:
    """``--gold``, ``--repos``/``--repo``, ``--tool-map`` and ``--grammars``."""
    add_gold(p, gold_required)
    add_repos(p)
    add_tool_map(p)
    add_grammars(p)


def resources(args: argparse.Namespace):
    """The gold, repositories, symbol index and tool map the options name; a file that
    cannot be used is a UsageError naming it (``load_resources``)."""
    check_gold(args)
    return load_resources(args.gold, _str(args.repos), _str(args.repo),
                          getattr(args, "tool_map", None), getattr(args, "grammars", None),
                          getattr(args, "gold_from_patch", None),
                          getattr(args, "patch_context", 0) or 0,
                          tuple(getattr(args, "label", None) or ()),
                          getattr(args, "label_from_path", None))


def _str(p: Path | str | None) -> str | None:
    return None if p is None else str(p)


def fail(command: str, message: str) -> int:
    """Print ``streameval <command>: <message>`` on stderr; the exit code for usage errors."""
    print(f"streameval {command}: {message}", file=sys.stderr)
    return 2


def setup_logging(verbose: bool = False, quiet: bool = False) -> None:
    """streameval's own log at INFO (what it does to runs and files, abort decisions,
    runs that cannot be scored), DEBUG with ``-v``, WARNING with ``-q``; libraries
    (watchfiles' per-change lines) stay at WARNING. Values from traces and requests are
    escaped and cut (``untrusted.SafeFormatter``)."""
    import logging

    from streameval.untrusted import log_to_stderr

    # one line per record, whatever a trace or a request put in its values
    log_to_stderr("%(asctime)s %(levelname)s %(name)s: %(message)s", logging.WARNING)
    level = logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO
    logging.getLogger("streameval").setLevel(level)
