"""``watch --ingest``: the options, and the ingest app wired to a watcher."""

from __future__ import annotations

import argparse
import ipaddress
import os

from streameval.live.ingest import IngestApp
from streameval.traces.ingest.spool import Spool

TOKEN_ENV = "STREAMEVAL_INGEST_TOKEN"
#: the spool folder inside the watched directory (its files are traces like any other)
SPOOL_NAME = "ingest"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from streameval.commands.options import positive_int

    p.add_argument("--ingest", action="store_true",
                   help="accept pushed runs on the metrics port: Claude Code HTTP hooks "
                        "(/v1/hooks/claude), OTLP logs (/v1/logs) and trace lines "
                        "(/v1/runs/ID/lines); stored under DIR/ingest (docs/ingest.md)")
    p.add_argument("--ingest-token", metavar="TOKEN",
                   help=f"bearer token pushes must carry (or ${TOKEN_ENV}); required "
                        "when --host is not a loopback address")
    p.add_argument("--ingest-max-runs", type=positive_int, default=1000, metavar="N",
                   help="runs each push source may create (default 1000)")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def from_args(args: argparse.Namespace, watcher) -> IngestApp | None:
    """The ingest app for ``watcher``, or None without ``--ingest``; UsageError when a
    non-loopback server would take pushes without a token."""
    from streameval.errors import UsageError

    if not getattr(args, "ingest", False):
        return None
    token = args.ingest_token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(watcher.cfg.host):
        raise UsageError(f"--ingest on {watcher.cfg.host} needs a token: pass --ingest-token "
                         f"or set {TOKEN_ENV} (anyone who can reach the port could push runs)")
    return ingest_app(watcher, token, args.ingest_max_runs)


def ingest_app(watcher, token: str | None = None, max_runs: int = 1000, **kw) -> IngestApp:
    """The ingest app of ``watcher``: its spool under the watched directory, its
    answers from the watcher (scored up to where, steering), its counts exported."""
    app = IngestApp(Spool(watcher.cfg.root / SPOOL_NAME, max_runs), token=token,
                    processed=watcher.processed_up_to, steer=watcher.steer_reason, **kw)
    app.counts = watcher.table.stats.ingest_requests
    return app
