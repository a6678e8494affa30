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

def add_gold(p: argparse.ArgumentParser) -> None:
    """``--gold``, and ``--gold-from-patch`` with ``--patch-context``. Neither is required:
    a run no gold names is scored on its gold-free signals (docs/metrics.md §5b)."""
    p.add_argument("--gold", metavar="PATH",
                   help="gold context: parquet, JSON or JSONL file, or a directory of "
                        "annot.json (without gold, runs are scored on their gold-free "
                        "signals only: docs/outcomes.md)")
    p.add_argument("--gold-from-patch", metavar="FILE",
                   help="reference patches (JSONL or parquet of instance_id, patch, and "
                        "repo, base_commit): the base lines each patch changes are the gold "
                        "of instances --gold does not name (docs/metrics.md §1b)")
    p.add_argument("--patch-context", type=non_negative_int, default=0, metavar="N",
                   help="with --gold-from-patch: widen each changed run by N lines")


def gold_given(args: argparse.Namespace) -> bool:
    """``--gold`` or ``--gold-from-patch`` was given: then a batch in which no run was
    measured against gold is an error (docs/metrics.md §5b), and a repository is needed."""
    return bool(getattr(args, "gold", None) or getattr(args, "gold_from_patch", None))


def check_repos(args: argparse.Namespace) -> None:
    """A UsageError when gold is given with no repository to measure it in."""
    from streameval.errors import UsageError

    if gold_given(args) and not (getattr(args, "repos", None) or getattr(args, "repo", None)):
        raise UsageError("gold needs the repositories it is measured in: give --repos DIR "
                         "and/or --repo DIR (or leave out --gold for gold-free signals only)")


def add_outcomes(p: argparse.ArgumentParser) -> None:
    """``--outcomes PATH``: whether each run solved its task (``sources.outcomes``)."""
    p.add_argument("--outcomes", metavar="PATH",
                   help="whether each run solved its task: a SWE-bench harness log directory "
                        "(report.json per instance), the harness's run summary (resolved_ids), "
                        "or JSON, JSONL, CSV or parquet of instance_id, resolved [, run_id, "
                        "labels...] (docs/outcomes.md)")


def outcomes_of(path: str | None):
    """The ``--outcomes`` file for a command that joins it onto records it reads (``view``,
    ``compare``); None without one; a file that cannot be used is a UsageError."""
    if not path:
        return None
    from streameval.errors import UsageError
    from streameval.sources.outcomes import OutcomeError, load_outcomes

    try:
        return load_outcomes(path)
    except OutcomeError as exc:
        raise UsageError(str(exc)) from None


def say_outcomes(command: str, outcomes, records, quiet: bool = False) -> bool:
    """How the runs met the ``--outcomes`` file, said on stderr (unless ``quiet`` and
    every run has an outcome); False when the file matched no run, which is an error
    (the command exits non-zero)."""
    if outcomes is None:
        return True
    match = outcomes.match(records)
    if match.runs and not match.matched:
        print(f"streameval {command}: --outcomes {outcomes.source} names none of the "
              f"{match.runs} run(s) (its {match.rows} row(s) match no instance or run id): "
              "is it the outcomes of these runs?", file=sys.stderr)
        return False
    if not quiet or match.matched < match.runs:
        print(f"streameval {command}: {match.message(outcomes.source)}", file=sys.stderr)
    return True


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


def add_sources(p: argparse.ArgumentParser, outcomes: bool = True) -> None:
    """``--gold``, ``--repos``/``--repo``, ``--tool-map``, ``--grammars`` and (for the
    commands that read runs' outcomes) ``--outcomes``."""
    add_gold(p)
    add_repos(p)
    add_tool_map(p)
    add_grammars(p)
    if outcomes:
        add_outcomes(p)


def resources(args: argparse.Namespace):
    """The gold, repositories, symbol index, tool map and outcomes the options name; a
    file that cannot be used is a UsageError naming it (``load_resources``)."""
    return load_resources(*sources(args))


def sources(args: argparse.Namespace) -> tuple:
    """``load_resources``'s arguments from the options (``runs.batch.Sources``: what a
    worker process builds its own resources from), the grammar set chosen here once."""
    from streameval.sources.symbols import default_grammars

    return (getattr(args, "gold", None), _str(getattr(args, "repos", None)),
            _str(getattr(args, "repo", None)), getattr(args, "tool_map", None),
            getattr(args, "grammars", None) or default_grammars(),
            getattr(args, "gold_from_patch", None), getattr(args, "patch_context", 0) or 0,
            tuple(getattr(args, "label", None) or ()), getattr(args, "label_from_path", None),
            getattr(args, "outcomes", None))


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
