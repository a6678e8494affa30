"""``streameval watch DIR``: the options, and a watcher served until a signal.

The options of early abort (``--abort-config``) and of pushed runs (``--ingest``) are
watch's too; each is turned into its part here and handed to the watcher.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streameval import config
from streameval.commands import otlp_options
from streameval.commands.options import (
    add_format,
    add_labels,
    add_server,
    add_sources,
    check_repos,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    resources,
    setup_logging,
)
from streameval.errors import UsageError
from streameval.live.abort.engine import AbortConfigError, AbortEngine, engine_for
from streameval.live.exporter import PER_RUN_SERIES
from streameval.live.ingest import SPOOL_NAME, ingest_routes
from streameval.live.loop import run_until_signal
from streameval.live.narrate import start_line
from streameval.live.otel_feed import attach as attach_otel
from streameval.live.pages import mount_live_page
from streameval.live.paths import DEFAULT_GLOBS, SNIFF_GLOBS
from streameval.live.pushtoken import PushToken, push_token
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, metavar="DIR", help="directory holding the agents' trace files")
    add_sources(p)
    add_labels(p)   # applied where runs get their identity (runs.evaluate.run_identity)
    add_server(p)
    add_format(p)
    p.add_argument("--glob", action="append", dest="globs", metavar="PATTERN",
                   help=f"trace file name pattern, repeatable; replaces the defaults (when "
                        f"not given: {' '.join(DEFAULT_GLOBS)}, and any "
                        f"{' '.join(SNIFF_GLOBS)} whose content is a known trace format)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="append each finished run's record here (JSONL)")
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="processes scoring runs, each run on one of them for life "
                        f"(default: the cores available, at most {config.MAX_DEFAULT_WORKERS}: "
                        f"{config.default_workers()} here); 1: one process scores every "
                        "run (docs/watch.md, \"Workers\")")
    p.add_argument("--predictions", type=Path, metavar="FILE",
                   help="SWE-bench predictions JSONL to take patches from")
    p.add_argument("--idle-timeout", type=positive_float, default=300.0, metavar="SECONDS",
                   help="seconds without growth that end a run")
    p.add_argument("--patch-grace", type=non_negative_float, default=30.0, metavar="SECONDS",
                   help="seconds to wait for a patch after a run ends")
    p.add_argument("--keep-finished", type=non_negative_float, default=3600.0, metavar="SECONDS",
                   help="seconds finished runs stay exported")
    p.add_argument("--max-runs", type=positive_int, default=10_000, metavar="N",
                   help="runs kept in memory at most, by all the workers together (each keeps "
                        "N / --workers): past it, the oldest finished runs whose record is "
                        "written leave first (default 10000)")
    p.add_argument("--per-run-series", type=non_negative_int, default=PER_RUN_SERIES, metavar="N",
                   help="runs whose per-run series /metrics exports at most, newest active first "
                        f"(default {PER_RUN_SERIES}; 0: none); the fleet series cover every run")
    p.add_argument("--checkpoint", type=Path, metavar="FILE",
                   help="state file for resuming after a restart (default: STATE_DIR/checkpoint.json "
                        "with --state-dir, else OUT.checkpoint.json beside --out)")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="directory for the watcher's own state (the checkpoint)")
    p.add_argument("--no-checkpoint", action="store_true",
                   help="keep no checkpoint: a restart re-reads every trace and still writes "
                        "no record twice (--out is read), but keeps no promise of a late patch "
                        "for runs that left memory, nor of abort decisions")
    p.add_argument("--checkpoint-interval", type=positive_float, default=5.0, metavar="SECONDS",
                   help="seconds between checkpoints")
    p.add_argument("--include-sidechain", action="store_true", help="score sub-agent tool calls too")
    p.add_argument("--poll", action="store_true", help="poll the file system instead of inotify")
    p.add_argument("--follow-outside-links", action="store_true",
                   help="follow trace files that are symbolic links to files outside DIR (by "
                        "default each is logged once and not followed: whoever writes in DIR "
                        "could otherwise have any file the watcher can read scored and shown)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="say only warnings and errors (no start line, run lines or summary)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also log every tool call of every run, and every file under DIR "
                        "that is not followed (runs started and ended, records, patches and "
                        "files read again are logged without it)")
    _add_abort_arguments(p)
    _add_ingest_arguments(p)
    otlp_options.add_otlp(p, live=True)


def config_from_args(args: argparse.Namespace) -> WatchConfig:
    return WatchConfig(
        root=args.dir.resolve(), globs=tuple(args.globs or DEFAULT_GLOBS),
        sniff=() if args.globs else SNIFF_GLOBS, host=args.host,
        port=args.port, out=args.out, predictions=args.predictions.resolve() if args.predictions else None,
        idle_timeout=args.idle_timeout, patch_grace=args.patch_grace,
        keep_finished=args.keep_finished, max_runs=args.max_runs, checkpoint=default_checkpoint(args),
        checkpoint_interval=args.checkpoint_interval, fmt=args.fmt,
        include_sidechain=args.include_sidechain, force_polling=args.poll,
        follow_outside_links=args.follow_outside_links)


def default_checkpoint(args: argparse.Namespace) -> Path | None:
    """The checkpoint: ``--checkpoint``, else in ``--state-dir``, else beside ``--out``;
    None with ``--no-checkpoint`` or nowhere to keep it (no --out: no record is owed)."""
    if args.no_checkpoint:
        return None
    if args.checkpoint is not None:
        return args.checkpoint
    if args.state_dir is not None:
        args.state_dir.mkdir(parents=True, exist_ok=True)
        return args.state_dir / "checkpoint.json"
    if args.out is not None:
        return args.out.with_name(args.out.name + ".checkpoint.json")
    return None


def run(args: argparse.Namespace) -> int:
    import anyio

    setup_logging(args.verbose, args.quiet)
    if not args.dir.is_dir():
        print(f"streameval watch: {args.dir} is not a directory", file=sys.stderr)
        return 2
    cfg = config_from_args(args)
    workers = _workers(args)
    check_repos(args)
    if workers > 1:
        return _supervise(args, cfg, workers)
    # the HTTP server's threads (a scrape, a hook's answer) get the interpreter within
    # 1 ms of asking while the watcher scores, not 5 (benchmarks/README.md, ingest)
    sys.setswitchinterval(0.001)
    res = resources(args)   # UsageError naming the gold or repository that cannot be used
    w = Watcher(cfg, res)
    try:
        engine = _abort_engine(args, w)
    except AbortConfigError as exc:
        print(f"streameval watch: {exc}", file=sys.stderr)
        return 2
    front = None
    try:
        token = push_token(args.ingest_token, args.ingest_token_file) if args.ingest else None
        emitter = otlp_options.emitter(args)
        if emitter is not None:
            attach_otel(w, emitter, args.otlp_live, engine)
        if args.front == "process":
            server, port, front = _serve_with_front(args, w, token)
        else:
            routes = ingest_routes(w, token.value, args.ingest_max_runs) if token else None
            server, _registry, port = serve(w.table, cfg.host, cfg.port, ingest=routes,
                                            per_run_series=args.per_run_series)
    except UsageError:
        if engine is not None:
            engine.close()
        raise
    mount_live_page(server.app, w)
    try:   # Ctrl-C at any moment from here on still ends with the summary
        print(f"streameval watch: serving metrics on http://{cfg.host}:{port}/metrics "
              f"and the page on http://{cfg.host}:{port}/ (watching {cfg.root})", flush=True)
        if token is not None:
            _say_token(token)
        if not args.quiet:
            print(f"streameval watch: {start_line(cfg, res, args.gold)}", flush=True)
        _freeze_what_lives_on(w, at_ticks=front is not None and emitter is None)
        anyio.run(run_until_signal, w)
    except KeyboardInterrupt:
        pass
    finally:
        if front is not None:
            front.close()
        server.close()
        if engine is not None:
            engine.close()
        otlp_options.close(emitter, "watch")
    if not args.quiet:
        summary = w.narration.summary(w).replace("\n", "\n  ")
        print(f"streameval watch: stopped; {summary}", flush=True)
    return 0


def _workers(args: argparse.Namespace) -> int:
    """``--workers``, or its default; ``--front thread`` scores in one process."""
    if args.front == "thread":
        if args.workers not in (None, 1):
            raise UsageError("--front thread serves and scores in one process: give "
                             "--workers 1, or leave --front out")
        return 1
    return args.workers or config.default_workers()


def _supervise(args: argparse.Namespace, cfg: WatchConfig, count: int) -> int:
    """``--workers N`` (N > 1): a front and N workers, started and kept going by this
    process (``live.workers``), which prints what one watcher prints."""
    import logging
    import tempfile

    from streameval.live.arbiter import Arbiter
    from streameval.live.fleet import MAX_GROUPS
    from streameval.live.guard import Limits
    from streameval.live.resume import foreign, part
    from streameval.live.server import backlog, bind
    from streameval.live.workers import Plan, Supervisor, WorkerError

    token = push_token(args.ingest_token, args.ingest_token_file) if args.ingest else None
    public = bind(cfg.host, cfg.port, backlog=backlog(Limits()))
    private = Path(tempfile.mkdtemp(prefix="streameval-watch-"))
    arbiter = Arbiter(cfg.checkpoint, cfg.root, count)
    arbiter.restore()
    links = str(private / "front.sock")
    plans = [Plan(i, count, links, str(private / f"worker-{i}.sock"),
                  str(part(cfg.checkpoint, i)) if cfg.checkpoint else None,
                  [str(p) for p in foreign(cfg.checkpoint, count)] if cfg.checkpoint else [])
             for i in range(count)]
    spool = cfg.root / SPOOL_NAME if args.ingest else None
    settings = {"workers": count, "links": links, "upstreams": [p.upstream for p in plans],
                "per_run_series": args.per_run_series, "fleet_groups": MAX_GROUPS,
                "counter_base": {}, "spool": str(spool) if spool is not None else None,
                "max_runs": args.ingest_max_runs, "idle": cfg.idle_timeout,
                "token": token.value if token else None, "limits": {},
                "verbose": logging.getLogger().getEffectiveLevel()}
    sup = Supervisor([sys.executable, "-m", "streameval.commands.watch_worker"], args, plans,
                     arbiter, public, settings, save_every=cfg.checkpoint_interval)
    sup.front.private_dir = private
    code, tally = 0, None
    try:
        try:
            line = sup.start()
        except WorkerError as exc:
            print(f"streameval watch: {exc}", file=sys.stderr)
            return exc.code
        except RuntimeError as exc:   # the front did not start
            raise UsageError(f"{exc}; --front thread serves from this process") from None
        port = public.getsockname()[1]
        print(f"streameval watch: serving metrics on http://{cfg.host}:{port}/metrics "
              f"and the page on http://{cfg.host}:{port}/ (watching {cfg.root})", flush=True)
        if token is not None:
            _say_token(token)
        if not args.quiet and line:
            print(f"streameval watch: {line}; scoring in {count} worker processes", flush=True)
        code = sup.run()
    except KeyboardInterrupt:
        pass
    finally:
        tally = sup.stop()
    if not args.quiet and tally is not None:
        summary = tally.text(cfg.out).replace("\n", "\n  ")
        print(f"streameval watch: stopped; {summary}", flush=True)
    return code


def _freeze_what_lives_on(w: Watcher, at_ticks: bool) -> None:
    """What the start made (modules, the gold, the repositories' indexes, the server)
    moved out of the garbage collector's sight (``live.freezer``), and with ``at_ticks``
    what survived each tick and file after: a full collection walks only what is new.

    Not at ticks in a process that serves pushes and ``/metrics`` from a thread of its
    own (``--front thread``) or exports OTLP: their connections and spans, caught in
    flight by a freeze, may die in cycles that would never be freed."""
    from streameval.live.freezer import Freezer

    freezer = Freezer()
    freezer.start()
    if at_ticks:
        w.tick_hooks.append(freezer.tick)
        w.between_files.append(freezer.tick)


def _add_abort_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--abort-config", type=Path, metavar="FILE",
                   help="early-abort policies (TOML; see examples/abort.toml)")
    p.add_argument("--dry-run", action="store_true",
                   help="with --abort-config: decide, log and count, but never act")


def _abort_engine(args: argparse.Namespace, watcher: Watcher) -> AbortEngine | None:
    return engine_for(watcher, args.abort_config, args.dry_run)


def _add_ingest_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ingest", action="store_true",
                   help="accept pushed runs on the metrics port: Claude Code HTTP hooks "
                        "(/v1/hooks/claude), OTLP logs (/v1/logs) and trace lines "
                        "(/v1/runs/ID/lines); stored under DIR/ingest (docs/ingest.md)")
    p.add_argument("--ingest-token-file", type=Path, metavar="FILE",
                   help="the bearer token pushes must carry, read from FILE; made (readable "
                        f"by you only, a new random token) when FILE does not exist. Else "
                        f"${config.INGEST_TOKEN_ENV}, else {config.ingest_token_file()} (made "
                        "when missing). Where the token is is printed, never the token")
    p.add_argument("--ingest-token", metavar="TOKEN",
                   help="the token itself (warns: every user of the machine can read a "
                        "command line; prefer --ingest-token-file)")
    p.add_argument("--ingest-max-runs", type=positive_int, default=1000, metavar="N",
                   help="runs each push source may create (default 1000)")
    p.add_argument("--front", choices=("process", "thread"), default="process",
                   help="'process' (the default) serves the port from a second process: it "
                        "serves /metrics from the numbers the watcher sends (a busy watcher's "
                        "last ones, their age said), stores pushes (--ingest) and passes the "
                        "page on to the watcher, so scrapes and hooks are answered on one "
                        "core while runs are scored on another; 'thread' serves everything "
                        "from the watcher's own process (docs/operate.md)")
    p.add_argument("--ingest-front", dest="front", choices=("process", "thread"),
                   default=argparse.SUPPRESS, help=argparse.SUPPRESS)   # its name before it served /metrics too


def _say_token(token: PushToken) -> None:
    """Where the pushes' token is (never the token), and what is wrong with it."""
    print(f"streameval watch: pushes to /v1/ need the bearer token in {token.where} "
          "(Authorization: Bearer ...; docs/ingest.md)", flush=True)
    if token.warning:
        print(f"streameval watch: warning: {token.warning}", file=sys.stderr, flush=True)


def _serve_with_front(args: argparse.Namespace, w: Watcher, token: PushToken | None):
    """``--front process``: the watcher's server on a private Unix socket, the public
    port served by the front (``live.front``: /metrics from ``mirror``, the pushes with
    ``--ingest``, ``token`` theirs); (server, port, link)."""
    import logging
    import shutil

    from streameval.live.guard import Limits
    from streameval.live.link import FrontProcess, Link
    from streameval.live.mirror import Feed
    from streameval.live.server import backlog, bind

    public = bind(w.cfg.host, w.cfg.port, backlog=backlog(Limits()))
    private, inner = private_socket("watcher.sock")
    server = None
    spool = w.cfg.root / SPOOL_NAME if args.ingest else None
    try:
        server, _registry, _ = serve(w.table, ingest=None, per_run_series=args.per_run_series,
                                     sock=inner)
        front = FrontProcess(public, {
            "spool": str(spool) if spool is not None else None, "upstream": str(private),
            "max_runs": args.ingest_max_runs, "idle": w.cfg.idle_timeout,
            "token": token.value if token else None, "limits": {},
            "verbose": logging.getLogger().getEffectiveLevel()})
        link = Link(w, front, spool, feed=Feed(server.collector))
    except BaseException as exc:
        if server is not None:
            server.close()
        public.close()
        inner.close()
        shutil.rmtree(private.parent, ignore_errors=True)
        if isinstance(exc, RuntimeError):   # the front did not start: said, not a traceback
            raise UsageError(f"{exc}; --front thread serves from this process") from None
        raise
    front.private_dir = private.parent
    return server, public.getsockname()[1], link


def private_socket(name: str, folder: Path | None = None):
    """A listening Unix socket ``name`` in a private folder (made now unless given):
    (its path, the socket)."""
    import socket
    import tempfile

    folder = folder or Path(tempfile.mkdtemp(prefix="streameval-watch-"))
    path = folder / name
    inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        inner.bind(str(path))
        inner.listen(128)
    except OSError:
        inner.close()
        raise
    inner.setblocking(False)
    return path, inner
