"""One worker of ``watch --workers N``: ``python -m streameval.commands.watch_worker FD
worker-I``, started by the supervisor (``live.workers``), which sends the command's
options and the worker's part on the socket ``FD``.

A worker is a watcher (the same wiring as ``watch`` with one worker: resources, the
abort policies, OpenTelemetry, the page) of the traces that are its own
(``live.shard``), serving its page and its scrape on a private Unix socket for the
front, linked to the front (``link.FrontSocket``), and asking the supervisor what the
workers share (run ids, who follows a path).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

#: how much lower a worker's CPU priority is than the front's (``nice``)
NICE = 4


def _yield_to_the_front() -> None:
    """Where the cores are fewer than the processes that want them, the front (the
    port: /metrics, the page, pushes and hooks) runs first and the workers score in the
    time left. Under 256 slow clients and 64 pushers on two cores, /metrics answered
    within 250 ms in 2 runs of 2 with it, and 1 of 3 without (issue 27). Refused (a
    sandbox without the call): the worker runs at the front's priority."""
    try:
        os.nice(NICE)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    import anyio

    from streameval.commands import otlp_options
    from streameval.commands.options import resources, setup_logging
    from streameval.commands.watch import _abort_engine, _freeze_what_lives_on, config_from_args
    from streameval.errors import UsageError
    from streameval.live.abort.engine import AbortConfigError
    from streameval.live.ingest import SPOOL_NAME
    from streameval.live.join import JoinFeed
    from streameval.live.link import FrontSocket, Link, die_with_parent
    from streameval.live.loop import run_until_signal
    from streameval.live.narrate import start_line
    from streameval.live.otel_feed import attach as attach_otel
    from streameval.live.pages import mount_live_page
    from streameval.live.server import serve
    from streameval.live.shard import Control, Shard
    from streameval.live.watch import Watcher
    from streameval.live.workers import read_start

    die_with_parent()
    _yield_to_the_front()
    sock = socket.socket(fileno=int(argv[0]))
    args, plan = read_start(sock)
    control = Control(sock)
    setup_logging(args.verbose, args.quiet)
    # the page's threads get the interpreter within 1 ms of asking, as in ``watch``
    sys.setswitchinterval(0.001)
    cfg = config_from_args(args)
    cfg.checkpoint = Path(plan.checkpoint) if plan.checkpoint else None
    # --max-runs bounds the watcher's memory, not each worker's: N workers keep about as
    # many runs as one (and each a full collection of half the objects, issue 27)
    cfg.max_runs = -(-cfg.max_runs // plan.count)
    engine = emitter = server = link = None
    try:
        res = resources(args)
        w = Watcher(cfg, res, shard=Shard(plan.index, plan.count, control),
                    foreign=[Path(p) for p in plan.foreign])
        engine = _said_once(plan.index, _abort_engine, args, w)
        emitter = otlp_options.emitter(args)
        if emitter is not None:
            attach_otel(w, emitter, args.otlp_live, engine)
        page = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        Path(plan.upstream).unlink(missing_ok=True)   # a worker started again binds its own again
        page.bind(plan.upstream)
        page.listen(128)
        page.setblocking(False)
        server, _registry, _ = serve(w.table, ingest=None, per_run_series=args.per_run_series,
                                     sock=page)
        mount_live_page(server.app, w)
        link = Link(w, FrontSocket(plan.links, {"hello": plan.index}),
                    cfg.root / SPOOL_NAME if args.ingest else None,
                    feed=JoinFeed(server.collector, w))
    except (UsageError, AbortConfigError) as exc:
        control.tell({"error": str(exc), "code": 2})
        return 2
    line = start_line(cfg, res, args.gold) if plan.index == 0 else None
    control.tell({"ready": line})
    try:
        _freeze_what_lives_on(w, at_ticks=emitter is None)
        anyio.run(run_until_signal, w)
    except KeyboardInterrupt:
        pass
    finally:
        link.close()
        server.close()
        if engine is not None:
            engine.close()
        otlp_options.close(emitter, "watch")
    control.tell({"summary": vars(w.narration.counts(w))})
    return 0


def _said_once(index: int, make, *args):
    """``make(*args)``, what it says at INFO said by the first worker only (the abort
    policies read: every worker reads the same file)."""
    import logging

    if index == 0:
        return make(*args)
    quiet = logging.getLogger("streameval.live.abort")
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        return make(*args)
    finally:
        quiet.setLevel(level)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
