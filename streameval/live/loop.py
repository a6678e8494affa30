"""The watcher's event loop: a ticker, and the file events handed to the watcher.

``run_watcher`` restores the checkpoint, scans, then runs until ``stop``: the ticker ends
idle runs, writes records and checkpoints; ``watch_events`` feeds watchfiles' batches
to ``Watcher.handle_changes``. Everything the watcher does runs on this one thread.
"""

from __future__ import annotations

import logging
from pathlib import Path

from streameval.live.watch import Watcher

log = logging.getLogger(__name__)


async def run_watcher(w: Watcher, stop=None, *, task_status=None) -> None:
    """Follow changes until ``stop`` (an anyio.Event) is set."""
    import anyio

    stop = stop or anyio.Event()
    w.start()
    if task_status is not None:
        task_status.started()

    async def ticker() -> None:
        while not stop.is_set():
            w.tick()
            with anyio.move_on_after(w.cfg.tick_interval):
                await stop.wait()

    async def events() -> None:
        await watch_events(w, stop)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            tg.start_soon(events)
            await stop.wait()
            tg.cancel_scope.cancel()
    finally:
        w.close()


async def watch_events(w: Watcher, stop) -> None:
    """Hand file events to ``w`` until ``stop``. The watch set leaves out what would
    stop watchfiles (``watchset``); when a watch fails anyway (a directory made
    unreadable, a link added later), the failure is logged once, and the set is made
    again a moment later: the watcher never stops watching."""
    import anyio
    import watchfiles

    from streameval.live.watchset import watch_set

    reported: set[Path] = set()
    failures: set[str] = set()
    extra = [w.cfg.predictions.parent] if w.cfg.predictions is not None else []
    while not stop.is_set():
        ws = await anyio.to_thread.run_sync(watch_set, w.cfg.root, reported, w.says_walk)
        failed = anyio.Event()

        async def watch(paths: list[Path], recursive: bool, failed=failed) -> None:
            try:
                async for changes in watchfiles.awatch(
                        *paths, debounce=w.cfg.debounce_ms, step=w.cfg.step_ms, stop_event=stop,
                        watch_filter=None, force_polling=w.cfg.force_polling or None,
                        poll_delay_ms=100, yield_on_timeout=False, recursive=recursive):
                    w.handle_changes([(p, change == watchfiles.Change.deleted) for change, p in changes])
            except Exception as exc:   # noqa: BLE001 - the Rust watcher's errors are plain
                if str(exc) not in failures:
                    failures.add(str(exc))
                    log.warning("watch: %s; watching again without it (the rescan every "
                                "%.0f s still finds files)", exc, w.cfg.rescan_interval)
                failed.set()

        async with anyio.create_task_group() as tg:
            for paths, recursive in ((ws.recursive + extra, True), (ws.flat, False)):
                if paths:
                    tg.start_soon(watch, paths, recursive)

            async def until_failed(failed=failed) -> None:
                await failed.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until_failed)
            await stop.wait()
            tg.cancel_scope.cancel()
        if failed.is_set() and not stop.is_set():
            with anyio.move_on_after(max(1.0, w.cfg.rescan_interval)):
                await stop.wait()


async def run_until_signal(w: Watcher) -> None:
    """Run until SIGTERM/SIGINT, then stop cleanly (checkpoint saved, output closed).

    The receiver of the signals begins at the first await, after ``Watcher.start`` has read
    what is there already (seconds, or minutes for a big tree). A SIGTERM in that while
    stops the watch at once, as Ctrl-C does (``KeyboardInterrupt``: the summary said, a
    worker's counts sent, the checkpoint as it was, which a restart reads again): its
    default action killed the process there, and ``watch --workers N`` lost the counts of
    a worker its supervisor stopped so. Not kept for after the start: a worker's start
    can wait on its supervisor, which is stopping."""
    import signal

    import anyio

    stop = anyio.Event()

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                stop.set()
                return

    before = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(on_signal)
            await run_watcher(w, stop)
            tg.cancel_scope.cancel()
    except BaseException as exc:
        if _interrupted(exc):   # the task group wraps it: the callers catch it bare
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupted(exc: BaseException) -> bool:
    """A KeyboardInterrupt, or a group of nothing else (what a task group raises)."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner = getattr(exc, "exceptions", None)
    return bool(inner) and all(_interrupted(e) for e in inner)
