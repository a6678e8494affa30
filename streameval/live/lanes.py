"""A route's threads: blocking work (a spool's fsync, a page's render) off the event
loop, its result handed back to the loop.

``loop.run_in_executor`` with a ``ThreadPoolExecutor`` did the same through two futures
chained by callbacks, a semaphore and a lock per call: 14% of the front's time under
Claude Code hooks (issue 28), and a lock the event loop could wait on while a thread that
held it waited for the interpreter. Here a call is one queue put and, when done, one
``call_soon_threadsafe``: no lock the loop shares with the threads.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: what a thread takes to stop
_STOP = object()


class Lane:
    """``workers`` threads started at the first call; ``close`` stops them and cancels
    what is still queued (a request not yet stored is never answered as stored)."""

    def __init__(self, workers: int, name: str):
        self.workers, self.name = workers, name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._lock = threading.Lock()   # starting and stopping the threads only

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on one of the threads; its result (or exception) as a future of
        the running loop."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        if self._closed:
            fut.cancel()
            return fut
        if len(self._threads) < self.workers:
            self._start()
        self._queue.put((loop, fut, fn, args))
        return fut

    def _start(self) -> None:
        with self._lock:
            while len(self._threads) < self.workers and not self._closed:
                t = threading.Thread(target=self._work, daemon=True,
                                     name=f"{self.name}-{len(self._threads)}")
                t.start()
                self._threads.append(t)

    def _work(self) -> None:
        take = self._queue.get
        while True:
            item = take()
            if item is _STOP:
                return
            loop, fut, fn, args = item
            if self._closed or fut.cancelled():
                _tell(loop, _cancel, fut)
                continue
            try:
                result = fn(*args)
            except BaseException as exc:   # noqa: BLE001 - handed to the awaiting request
                _tell(loop, _fail, fut, exc)
            else:
                _tell(loop, _done, fut, result)

    def close(self, wait: float = 5.0) -> None:
        """Stop taking work: what is queued is cancelled; a call running is given
        ``wait`` seconds to end (a write half done is cut at the next start anyway, and
        was never acknowledged)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
            for _ in threads:
                self._queue.put(_STOP)
        for t in threads:
            if t is not threading.current_thread():
                t.join(wait)


def _tell(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        pass   # the loop is closed: nobody awaits the answer any more


def _done(fut: asyncio.Future, result: Any) -> None:
    if not fut.done():
        fut.set_result(result)


def _fail(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def _cancel(fut: asyncio.Future) -> None:
    fut.cancel()
