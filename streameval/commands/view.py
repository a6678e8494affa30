"""``streameval view RECORDS.jsonl``: the page over recorded runs, served or written.

Served, it is the live page's fleet and run pages over the records (``report/
page_records``), on the same routes, bind rules and policy as the watcher's page.
``--html FILE`` writes all of it as one self-contained file that opens from disk;
``--svg FILE`` writes one run's coverage curve (the README's pictures are made so).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from streameval.commands.options import (
    add_server,
    add_sources,
    outcomes_of,
    resources,
    say_outcomes,
)
from streameval.errors import Interrupted
from streameval.live.asgi import App
from streameval.live.page import PageRoutes
from streameval.live.server import HttpServer
from streameval.report.page_html import self_contained
from streameval.report.page_records import RecordsPages, read_records
from streameval.report.plot import coverage_svg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", nargs="+", type=Path, metavar="FILE",
                   help="records (JSONL) written by replay or watch --out")
    add_sources(p)
    p.add_argument("--traces", type=Path, metavar="DIR",
                   help="where the records' traces are (their `trace` is relative to the "
                        "directory replay was given); with --gold and --repos, each run "
                        "page shows its calls and gold strips (default: the current directory)")
    add_server(p)
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write the page as one self-contained HTML file and exit")
    p.add_argument("--svg", type=Path, metavar="FILE",
                   help="write one run's coverage per step as SVG and exit (--run)")
    p.add_argument("--run", metavar="ID", help="with --svg: the run (default: the first record)")
    p.add_argument("--title", metavar="TEXT", help="with --svg: the picture's title")


def run(args: argparse.Namespace) -> int:
    """Exit code: 0; 1 when the records file is empty, or when, with gold, the page lacks
    the calls and strips of runs whose trace was not found (the file is written and the
    page served all the same); 2 for a usage error (a file of no records); 130 on Ctrl-C."""
    missing = [str(p) for p in args.records if not p.is_file()]
    if missing:
        print(f"streameval view: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    records = read_records(args.records)   # UsageError: a file of no records
    if not records:
        print("streameval view: no records in " + " ".join(map(str, args.records)), file=sys.stderr)
        return 1
    outcomes = outcomes_of(args.outcomes)   # UsageError for a file that cannot be used
    for r in records if outcomes is not None else ():
        outcomes.join(r)
    if not say_outcomes("view", outcomes, records, quiet=True):
        return 2
    res = resources(args) if args.gold else None
    pages = RecordsPages(records, res, args.traces.resolve() if args.traces else None)
    if args.svg:
        return _write_svg(args, pages)
    code = _say_missing_traces(pages) if res is not None else 0
    if args.html:
        return _write_html(args.html, pages) or code
    return _serve(args, pages)


def _say_missing_traces(pages: RecordsPages) -> int:
    """With gold, a run page shows calls and strips from the run's trace: say which were
    not found and where they were looked for (1), or 0 when every one was."""
    missing = pages.traces_missing()
    if not missing:
        return 0
    run_id, tried = missing[0]
    where = " and ".join(map(str, tried)) if tried else "nowhere: its record names no trace"
    print(f"streameval view: the traces of {len(missing)} of {_runs(len(pages.ids))} were not "
          f"found, so their pages show no calls and no gold strips (run {run_id}: tried "
          f"{where}); --traces DIR is the directory replay was given", file=sys.stderr)
    return 1


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _write_svg(args: argparse.Namespace, pages: RecordsPages) -> int:
    run_id = args.run or pages.ids[0]
    rec = pages.by_id.get(run_id)
    if rec is None:
        print(f"streameval view: no run {run_id!r} in the records", file=sys.stderr)
        return 2
    args.svg.write_text(coverage_svg(rec, title=args.title), encoding="utf-8")
    print(f"streameval view: wrote {args.svg} ({rec.get('num_steps')} steps of {run_id})")
    return 0


def _write_html(dest: Path, pages: RecordsPages) -> int:
    data = {"fleet": pages.fleet(None),
            "runs": [[run_id, pages.detail(run_id)] for run_id in pages.ids]}
    dest.write_text(self_contained(data), encoding="utf-8")
    print(f"streameval view: wrote {dest} ({_runs(len(pages.ids))})")
    return 0


def _serve(args: argparse.Namespace, pages: RecordsPages) -> int:
    app = App()
    PageRoutes(pages).mount(app)
    # UsageError names a bad host or port
    server = HttpServer(app, args.host, args.port, serving="the page")
    done = threading.Event()
    try:   # from the line that says where the page is, a Ctrl-C is the interrupt it says
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        print(f"streameval view: the page on http://{args.host}:{server.port}/ "
              f"({_runs(len(pages.ids))}; Ctrl-C stops)", flush=True)
        while not done.wait(1.0):
            pass
    except KeyboardInterrupt:
        raise Interrupted("the page is no longer served; nothing was written") from None
    finally:
        server.close()
    return 0
