"""``streameval inspect TRACE``: how a user debugs an adapter.

Prints every tool call with its category and the reads/edits inferred from it (file,
lines as shown, base-commit lines after edit mapping), then a summary; with gold, the
metrics too. It goes through the same ``session`` engine as replay and watch, so what
it shows is what they score.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TextIO

from .model import GRANULARITIES, RunIdentity, ToolCall


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", type=Path, help="a trace file (any known format)")
    p.add_argument("--gold", help="gold file (parquet, JSON, JSONL or a directory of annot.json)")
    p.add_argument("--repos", help="directory of clones named owner__repo")
    p.add_argument("--repo", help="one repository (git or plain directory) for this trace")
    p.add_argument("--format", dest="fmt", help="trace format (default: detected)")
    p.add_argument("--instance", help="instance id (default: meta.json or the directory name)")
    p.add_argument("--width", type=int, default=160, help="table width in characters")


def _fmt_ranges(ranges) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def _describe_read(r) -> str:
    name = r.repo_path or f"{r.trace_path} (not in repo)"
    if r.listing:
        return f"{name} [file]"
    shown = _fmt_ranges([r.current]) if r.current else "-"
    base = _fmt_ranges(r.base) if r.base else "-"
    return f"{name} lines {shown} -> base {base}" if shown != base else f"{name} lines {shown}"


def _short(call: ToolCall, width: int) -> str:
    inp = call.input or {}
    for key in ("command", "file_path", "path", "pattern", "input"):
        if key in inp and isinstance(inp[key], str):
            text = " ".join(inp[key].split())
            return text if len(text) <= width else text[: width - 1] + "…"
    return ""


class _Printer:
    def __init__(self, out: TextIO, width: int):
        self.out, self.width, self.n = out, width, 0

    def __call__(self, session, outcome, call: ToolCall) -> None:
        self.n += 1
        mark = "S" if outcome.step is not None else " "
        head = f"{self.n:>4} {mark} {call.tool[:18]:<18} {outcome.category:<8} "
        print(head + _short(call, max(20, self.width - len(head))), file=self.out)
        for r in outcome.reads:
            print(f"{'':>8}read  {_describe_read(r)}", file=self.out)
        for path in outcome.edits:
            print(f"{'':>8}edit  {path}", file=self.out)
        for reason, msg in outcome.problems:
            print(f"{'':>8}note  {getattr(reason, 'value', reason)}: {msg}", file=self.out)


def _resources(args):
    from .gold import load_gold
    from .repo import RepoCache
    from .session import Resources
    from .symbols import SymbolIndex

    gold = load_gold(args.gold) if args.gold else None
    repos = RepoCache(args.repos, args.repo) if (args.repos or args.repo) else None
    return Resources(gold, repos, SymbolIndex())


def _session_factory(args, res, fmt: str, printer: _Printer):
    from .identity import identify
    from .session import RunSession, make_session

    identity = identify(args.trace, args.instance)

    def factory(trace_instance: str | None) -> RunSession:
        ident = identity if not trace_instance else RunIdentity(
            trace_instance, identity.run_id, identity.agent, identity.model)
        if res.gold is not None and res.repos is not None:
            s = make_session(res, ident, fmt, trace_instance)
            if s.view is None and res.repos is not None and args.repo:
                s = RunSession(ident, None, _plain_view(args.repo), fmt=fmt, error=s.error)
        else:
            view = _plain_view(args.repo) if args.repo else None
            s = RunSession(ident, None, view, fmt=fmt, error="no gold given")
        s.listeners.append(printer)
        return s

    return factory


def _plain_view(repo: str):
    from .repo import RepoCache

    try:
        return RepoCache(None, repo).view_for(None)
    except Exception:  # a view is a nicety for display here; absence is reported below
        return None


def run(args: argparse.Namespace) -> int:
    from .errors import StreamevalError
    from .session import TraceReader, iter_lines, open_adapter

    out = sys.stdout
    try:
        fmt, adapter = open_adapter(args.trace, args.fmt)
    except (StreamevalError, OSError) as exc:
        print(f"streameval inspect: {exc}", file=sys.stderr)
        return 2
    res = _resources(args)
    printer = _Printer(out, args.width)
    print(f"{'#':>4} S {'tool':<18} {'category':<8} input   (S = a step: showed repo code)",
          file=out)
    reader = TraceReader(adapter, _session_factory(args, res, fmt, printer))
    lines = 0
    for line, lineno in iter_lines(args.trace):
        lines = lineno
        reader.feed_line(line, lineno)
    sessions = reader.close()
    _summary(out, args.trace, fmt, lines, sessions)
    return 0


def _summary(out: TextIO, trace: Path, fmt: str, lines: int, sessions) -> None:
    bad: Counter = Counter()
    calls = steps = side = 0
    files: set[str] = set()
    for s in sessions:
        bad.update(s.extras.bad_lines)
        calls += s.extras.tool_calls
        side += s.extras.sidechain_calls
        steps += s.num_steps
        files.update(s.builder.files_read if hasattr(s.builder, "files_read") else ())
    print(f"\nsummary: {trace}", file=out)
    print(f"  format       {fmt}", file=out)
    print(f"  lines        {lines}", file=out)
    print(f"  runs         {len(sessions)}", file=out)
    print(f"  tool calls   {calls} (+{side} in sub-agents, not scored)", file=out)
    print(f"  steps        {steps}", file=out)
    unparsed = ", ".join(f"{k}={v}" for k, v in sorted(bad.items())) or "none"
    print(f"  unparsed     {unparsed}", file=out)
    for s in sessions:
        _metrics(out, s)


def _metrics(out: TextIO, s) -> None:
    rec = s.record()
    print(f"\nrun {rec.get('run_id')} instance {rec.get('instance_id')}", file=out)
    if "error" in rec:
        print(f"  metrics: not computed ({rec['error']})", file=out)
        return
    print(f"  {'granularity':<12}{'coverage':>10}{'precision':>11}{'auc':>8}{'redundancy':>12}",
          file=out)
    for g in GRANULARITIES:
        f = rec["final"][g]
        t = rec["trajectory"]
        print(f"  {g:<12}{f['coverage']:>10.3f}{f['precision']:>11.3f}"
              f"{t['auc_coverage'][g]:>8.3f}{t['redundancy'][g]:>12.3f}", file=out)
    if "editloc" in rec:
        e = rec["editloc"]
        print(f"  editloc      recall {e['recall']:.3f} ({e['intersection']}/{e['pred_size']})",
              file=out)
