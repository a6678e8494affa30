"""The wild survey: what streameval makes of real traces other people committed.

Reads every trace named by ``benchmarks/wild/manifest.tsv`` out of local git mirrors
(``--mirrors``, the layout the ``fetch`` tool makes: ``<owner>+<name>/repo``; never the
network), runs streameval on each in-process with no ``--format``, and reports per
source: files, detected, calls, reads (calls that credited lines), unknown tools,
unparsed commands, problems by reason, crashes, and the silent failure the survey is
for: files that hold actions (by a crude format-independent count, see
``wild_measure``) but gave 0 calls.

    python benchmarks/wild.py [--mirrors DIR] [--json FILE|-] [--files FILE]

Identical blobs are measured once (the first source naming them keeps them), and a
blob identical to a file in ``tests/fixtures/real`` is skipped: those are already
tested. Figures and method: ``benchmarks/wild/README.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter, OrderedDict
from pathlib import Path

from wild_measure import Measure, measure
from wild_sources import BlobReader, Trace, expand, git_dir, materialise, read_manifest

from streameval import config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIELDS = ("files", "detected", "calls", "reads", "unknown_tools", "unparsed", "problems",
          "crashes", "zero_call_actions")


def fixture_blobs(root: Path) -> set[str]:
    """Git blob ids of the files in ``tests/fixtures/real`` (so the survey skips them)."""
    out = set()
    for f in (root / "tests" / "fixtures" / "real").rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            out.add(hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
    return out


def survey(traces: list[Trace], mirrors: Path, skip: set[str]
           ) -> tuple[list[tuple[Trace, Measure]], list[Trace]]:
    """Measure every trace (one ``git cat-file`` process per repository); also return
    the traces whose blobs the snapshot lacks (4 MiB and more), which are not measured."""
    results: list[tuple[Trace, Measure]] = []
    missing: list[Trace] = []
    seen: set[tuple[str, ...]] = set()
    readers: dict[str, BlobReader] = {}
    with tempfile.TemporaryDirectory(prefix="wild-") as tmp:
        for t in traces:
            key = tuple(sha for _, sha, _ in t.blobs)
            if key in seen or (len(key) == 1 and key[0] in skip):
                continue
            seen.add(key)
            reader = readers.get(t.repo)
            if reader is None:
                reader = readers[t.repo] = BlobReader(git_dir(mirrors, t.repo))
            path = materialise(t, reader, Path(tmp))
            if path is None:  # over the snapshot's size limit: not surveyed, listed apart
                missing.append(t)
                continue
            results.append((t, measure(path, t.hint)))
    for r in readers.values():
        r.close()
    return results, missing


def zero_call_with_actions(m: Measure) -> bool:
    """The silent failure: the file holds actions, streameval (undetected, or read as
    the detected format) took no call from it."""
    return m.actions > 0 and (m.detected is None or m.calls == 0)


def aggregate(results: list[tuple[Trace, Measure]]) -> OrderedDict[str, dict]:
    """Per-source totals (keyed by source, in manifest order) plus ``TOTAL``."""
    out: OrderedDict[str, dict] = OrderedDict()
    for t, m in results:
        for key in (t.source, "TOTAL"):
            a = out.setdefault(key, {
                "repo": t.repo if key != "TOTAL" else "", "files": 0, "detected": 0,
                "calls": 0, "sidechain_calls": 0, "reads": 0, "unknown_tools": 0,
                "unparsed": 0, "problems": Counter(), "crashes": 0,
                "zero_call_actions": 0, "formats": Counter(), "versions": Counter(),
                "forced_calls": 0, "forced_reads": 0, "unknown_tool_names": Counter()})
            a["files"] += 1
            a["crashes"] += 1 if m.crash else 0
            if m.detected:
                a["detected"] += 1
                a["formats"][m.detected] += 1
                a["calls"] += m.calls
                a["sidechain_calls"] += m.sidechain_calls
                a["reads"] += m.reads
                a["unknown_tools"] += sum(m.unknown_tools.values())
                a["unknown_tool_names"].update(m.unknown_tools)
                a["unparsed"] += m.problems.get("unparsed_command", 0)
                a["problems"].update(m.problems)
            else:
                a["formats"]["(undetected)"] += 1
                a["forced_calls"] += m.calls
                a["forced_reads"] += m.reads
            if m.version:
                a["versions"][m.version.split("=", 1)[1]] += 1
            a["zero_call_actions"] += 1 if zero_call_with_actions(m) else 0
    out.move_to_end("TOTAL")
    return out


def _short(c: Counter, n: int = 3) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.most_common(n)) or "-"


def print_table(agg: OrderedDict[str, dict], out) -> None:
    head = (f"{'source':<28} {'files':>5} {'det':>5} {'calls':>6} {'reads':>6} {'unk':>4} "
            f"{'unpar':>5} {'crash':>5} {'0call':>5}  problems (top 3)")
    print(head, file=out)
    print("-" * len(head), file=out)
    for src, a in agg.items():
        if src == "TOTAL":
            print("-" * len(head), file=out)
        print(f"{src:<28} {a['files']:>5} {a['detected']:>5} {a['calls']:>6} {a['reads']:>6} "
              f"{a['unknown_tools']:>4} {a['unparsed']:>5} {a['crashes']:>5} "
              f"{a['zero_call_actions']:>5}  {_short(a['problems'])}", file=out)


def to_json(agg: OrderedDict[str, dict], results, missing, elapsed: float) -> dict:
    def plain(a: dict) -> dict:
        return {k: (dict(v.most_common()) if isinstance(v, Counter) else v) for k, v in a.items()}
    return {
        "elapsed_s": round(elapsed, 1),
        "sources": {k: plain(v) for k, v in agg.items() if k != "TOTAL"},
        "total": plain(agg.get("TOTAL", {})),
        "undetected": [f"{t.repo}:{t.path}" for t, m in results if not m.detected],
        "zero_call_actions": [f"{t.repo}:{t.path}" for t, m in results
                              if zero_call_with_actions(m)],
        "not_in_snapshot": [f"{t.repo}:{t.path}" for t in missing],
        "crashes": [{"file": f"{t.repo}:{t.path}", "error": m.crash}
                    for t, m in results if m.crash],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirrors", type=Path,
                   help="directory of fetched bare mirrors (<owner>+<name>/repo; default "
                        f"${config.MIRRORS_ENV}; benchmarks/README.md \"Folders\")")
    p.add_argument("--manifest", type=Path, default=HERE / "wild" / "manifest.tsv")
    p.add_argument("--source", action="append", help="only these sources (repeatable)")
    p.add_argument("--json", dest="json_out", metavar="FILE",
                   help="write the summary as JSON ('-' for stdout; the table goes to stderr)")
    p.add_argument("--files", metavar="FILE", help="write one JSON line per surveyed trace")
    args = p.parse_args(argv)
    args.mirrors = config.local_path(config.MIRRORS_ENV, args.mirrors)
    if args.mirrors is None:
        p.error(f"give --mirrors DIR or set {config.MIRRORS_ENV}")

    rows = [r for r in read_manifest(args.manifest) if not args.source or r.source in args.source]
    t0 = time.perf_counter()
    traces = expand(rows, args.mirrors)
    results, missing = survey(traces, args.mirrors, fixture_blobs(ROOT))
    elapsed = time.perf_counter() - t0
    agg = aggregate(results)
    out = sys.stderr if args.json_out == "-" else sys.stdout
    print_table(agg, out)
    print(f"\n{len(results)} traces in {elapsed:.1f} s ({len(missing)} more not in the "
          "snapshots: 4 MiB and over)", file=out)
    if args.files:
        with open(args.files, "w", encoding="utf-8") as fh:
            for t, m in results:
                fh.write(json.dumps({"source": t.source, "repo": t.repo, "commit": t.commit,
                                     "path": t.path, "bytes": t.size, **m.as_dict()},
                                    ensure_ascii=False) + "\n")
    if args.json_out:
        text = json.dumps(to_json(agg, results, missing, elapsed), indent=1, ensure_ascii=False) + "\n"
        if args.json_out == "-":
            sys.stdout.write(text)
        else:
            Path(args.json_out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
