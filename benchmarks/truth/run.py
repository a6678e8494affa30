"""Ground truth for reading: re-execute real trajectories on provenance-tagged copies of
their base commits and score streameval's credited lines against what each call showed.

    python benchmarks/truth/run.py --corpus "$STREAMEVAL_MIRRORS/gruckion+mini-swe-agent/repo" \\
        --mirrors "$STREAMEVAL_MIRRORS" [--limit N] [--only IID,...] [--json out.json]
    python benchmarks/truth/run.py --fixtures [--json out.json]

Safety: this harness executes commands recorded in traces. It does so only here, for
measuring, and only inside bubblewrap (``truth.sandbox``): no network, the system
read-only, only the run's own copy, /tmp and $HOME writable, a timeout per command.
The product (``streameval``) never executes anything from a trace.

The method is in ``benchmarks/truth/README.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))   # benchmarks/: the ``truth`` package, ``machine``

from machine import describe  # noqa: E402

from streameval.sources.basetext import BaseTexts  # noqa: E402
from streameval.sources.repo import GitRepo  # noqa: E402
from truth.report import figures, render, render_examples  # noqa: E402
from truth.runner import Tally, replay_run  # noqa: E402
from truth.sandbox import available  # noqa: E402
from truth.sources import (  # noqa: E402
    agreement,
    corpus_runs,
    fixture_runs,
    scenario_expected,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--corpus", type=Path, help="the mini-swe-agent corpus git directory")
    p.add_argument("--mirrors", type=Path, help="directory of <owner>+<name>/repo mirrors")
    p.add_argument("--fixtures", action="store_true",
                   help="the project's scripted real CLI runs (tests/fixtures/real)")
    p.add_argument("--limit", type=int, default=0, help="at most N runs")
    p.add_argument("--only", default="", help="comma-separated instance ids")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per command")
    p.add_argument("--trimmed-shown", action="store_true",
                   help="count blank lines a harness trimmed at an output's edges as shown")
    p.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    p.add_argument("--json", type=Path, help="write figures, examples and per-call records")
    p.add_argument("--examples", type=int, default=3, help="examples printed per class")
    args = p.parse_args(argv)
    if not args.fixtures and not (args.corpus and args.mirrors):
        p.error("give --corpus and --mirrors, or --fixtures")
    why = available()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="truth-", dir=args.work) as scratch:
        result = run(args, Path(scratch))
    print(result["table"])
    print()
    print(result["examples_text"])
    if args.json:
        out = {k: v for k, v in result.items() if k not in ("table", "examples_text")}
        args.json.write_text(json.dumps(out, indent=1, default=list))
    return 0


def run(args: argparse.Namespace, scratch: Path) -> dict:
    t0 = time.time()
    skipped: Counter[str] = Counter()
    if args.fixtures:
        specs = fixture_runs(scratch / "scenario")
    else:
        only = set(filter(None, args.only.split(","))) or None
        specs = corpus_runs(args.corpus, args.mirrors, skipped, only)
    groups: dict[str, Tally] = {}
    records: dict[str, dict] = {}
    texts = BaseTexts()
    repos: dict[Path, GitRepo] = {}
    n = 0
    try:
        for spec in specs:
            if args.limit and n >= args.limit:
                break
            n += 1
            try:
                tally, recs = replay_run(spec, scratch / f"run-{n}", args.timeout, texts,
                                         repos, args.trimmed_shown)
            except Exception as exc:  # noqa: BLE001 - one run's failure is counted, not fatal
                skipped[f"replay failed: {type(exc).__name__}"] += 1
                print(f"[{n}] {spec.name}: replay failed: {exc!r}", file=sys.stderr, flush=True)
                continue
            groups.setdefault(spec.group, Tally()).merge(tally)
            f = figures(tally)
            records[spec.name] = {"group": spec.group, "figures": f, "calls": recs,
                                  "patch_differs_in": tally.patch_differs}
            if args.fixtures:
                records[spec.name]["scenario"] = agreement(recs, scenario_expected(spec.name))
            patch = "" if not f["runs_with_patch"] else ", final patch reproduced" \
                if f["patch_reproduced"] else f", final patch differs in {tally.patch_differs}"
            print(f"[{n}] {spec.name}: read calls {f['read_calls']}, checkable "
                  f"{f['checkable']}, exact {f['exact']}{patch} ({f['seconds']} s)",
                  file=sys.stderr, flush=True)
    finally:
        for repo in repos.values():
            repo.close()
    total = Tally()
    for t in groups.values():
        total.merge(t)
    if len(groups) > 1:
        groups = {**groups, "all": total}
    header = (f"truth harness, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"streameval {_commit()}, {describe()}, timeout {args.timeout:g} s/command, "
              + ("trimmed blank edge lines count as shown, " if args.trimmed_shown else "")
              + f"wall {time.time() - t0:.0f} s")
    table = render(groups, dict(skipped), header)
    if args.fixtures:
        table += "\n\n" + _agreement_text(records)
    return {"header": header, "skipped": dict(skipped),
            "groups": {k: {"figures": figures(t), **t.as_dict()} for k, t in groups.items()},
            "runs": records, "table": table,
            "examples_text": render_examples(groups, args.examples)}


def _agreement_text(records: dict[str, dict]) -> str:
    """The harness's truth against tests/agents/scenario.py's EXPECTED (worked out by
    hand): a check of the harness itself on the scripted runs."""
    out = ["harness truth vs tests/agents/scenario.py EXPECTED (by hand), per scripted run:"]
    for name, info in records.items():
        rows = info.get("scenario", [])
        agree = sum(r["agree"] for r in rows)
        out.append(f"  {name}: agree on {agree} of {len(rows)} read calls")
        for r in rows:
            if not r["agree"]:
                out.append(f"    call {r['call']} {r['command']!r}: harness {r['harness']}, "
                           f"scenario {r['scenario']}")
    return "\n".join(out)


def _commit() -> str:
    """The last commit that changed ``streameval/`` (what was measured)."""
    try:
        return subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%h", "--",
                               str(HERE.parent.parent / "streameval")],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
