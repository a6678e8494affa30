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

from streameval.commands.options import add_server, add_sources, resources
from streameval.live.asgi import App
from streameval.live.page import PageRoutes
from streameval.live.server import HttpServer
from streameval.report.page_html import self_contained
from streameval.report.page_records import RecordsPages, read_records
from streameval.report.plot import coverage_svg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", nargs="+", type=Path, metavar="FILE",
                   help="records (JSONL) written by replay or watch --out")
    add_sources(p, gold_required=False)
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
    missing = [str(p) for p in args.records if not p.is_file()]
    if missing:
        print(f"streameval view: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    records = read_records(args.records)
    if not records:
        print("streameval view: no records in " + " ".join(map(str, args.records)), file=sys.stderr)
        return 1
    res = resources(args) if args.gold else None
    pages = RecordsPages(records, res, args.traces.resolve() if args.traces else None)
    if args.svg:
        return _write_svg(args, pages)
    if args.html:
        return _write_html(args.html, pages)
    return _serve(args, pages)


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
    print(f"streameval view: wrote {dest} ({len(pages.ids)} runs)")
    return 0


def _serve(args: argparse.Namespace, pages: RecordsPages) -> int:
    app = App()
    PageRoutes(pages).mount(app)
    server = HttpServer(app, args.host, args.port)   # UsageError names a bad host or port
    print(f"streameval view: the page on http://{args.host}:{server.port}/ "
          f"({len(pages.ids)} runs; Ctrl-C stops)", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        while not done.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
