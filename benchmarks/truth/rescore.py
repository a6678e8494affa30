"""Score this checkout's reading against a truth the harness stored, without re-executing.

    python benchmarks/truth/rescore.py STORED.json --corpus GITDIR --mirrors DIR [RUN ...]

The truth of a call (which base lines it showed) depends on the trajectory and the base
commit only, not on streameval; the harness's ``--json`` keeps it per checkable call.
So a change to the reading can be measured against the whole corpus in seconds instead
of re-running the sandbox for twenty minutes: each run's calls are read again by
``StepBuilder`` over the base commit (as ``runner.py`` feeds them), and credited lines
are compared with the stored truth. The figure is the harness's "exact"; the classes of
the misses are left to the full run. Calls the stored run did not record but that now
credit lines are listed apart (a new read the truth never saw is not checked).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streameval.model import RunInfo, ToolCall  # noqa: E402
from streameval.reading.steps import StepBuilder  # noqa: E402
from streameval.sources.basetext import BaseTexts  # noqa: E402
from streameval.sources.repo import GitRepo  # noqa: E402
from truth.score import Line, credited, ranges  # noqa: E402
from truth.sources import corpus_runs  # noqa: E402


def parse_ranges(per_file: dict[str, str] | None) -> set[Line]:
    """``{path: "3-9,12"}`` back into lines (the inverse of ``score.ranges``)."""
    out: set[Line] = set()
    for path, text in (per_file or {}).items():
        for part in text.split(","):
            a, _, b = part.partition("-")
            out.update((path, n) for n in range(int(a), int(b or a) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("stored", type=Path, help="the harness's --json output")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--mirrors", type=Path, required=True)
    p.add_argument("runs", nargs="*", help="only these runs (instance ids)")
    a = p.parse_args(argv)
    stored = json.loads(a.stored.read_text())["runs"]
    repos: dict[Path, GitRepo] = {}
    texts = BaseTexts()
    tally: Counter[str] = Counter()
    wrong: list[str] = []
    t0 = time.perf_counter()
    for spec in corpus_runs(a.corpus, a.mirrors, Counter(), set(a.runs) or None):
        rec = stored.get(spec.name)
        if rec is None:
            continue
        calls = {c["call"]: c for c in rec["calls"]}
        if spec.gitdir not in repos:
            repos[spec.gitdir] = GitRepo(spec.gitdir)
        repo = repos[spec.gitdir]
        builder = StepBuilder(repo.at(spec.commit), texts=texts)
        n = 0
        for ev in spec.events:
            if isinstance(ev, RunInfo) and ev.cwd:
                builder.add_root(ev.cwd)
            if not isinstance(ev, ToolCall):
                continue
            n += 1
            if ev.sidechain:
                continue
            got = credited(builder.consume(ev))
            c = calls.get(n)
            if c is None:
                if got:
                    tally["calls not in the stored run that credit lines"] += 1
                continue
            if c["status"] != "checkable":
                continue
            tally["checkable"] += 1
            truth = parse_ranges(c.get("truth"))
            if got == truth:
                tally["exact"] += 1
            else:
                wrong.append(f"{spec.name} call {n}: {c['command'][:100]!r} "
                             f"credited, not shown {ranges(got - truth)}; "
                             f"shown, not credited {ranges(truth - got)}")
    for r in repos.values():
        r.close()
    share = tally["exact"] / max(1, tally["checkable"])
    print(f"exact {tally['exact']} of {tally['checkable']} checkable calls ({share:.2%}); "
          f"{dict(tally)}; {time.perf_counter() - t0:.0f} s")
    for line in wrong:
        print("  " + line.replace("\n", "⏎"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
