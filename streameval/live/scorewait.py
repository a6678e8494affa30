"""Waiting, without a thread, for the watcher to have scored what a request stored.

A session's ``PreToolUse`` hook is answered once the calls stored before it are scored
(at most ``SCORE_WAIT``), so a policy a call trips denies the agent's very next call.
Each wait is a future on the server's event loop; the watcher, after every batch it
processed, asks the loop to settle the waits whose bytes it has read (from another
process: ``live.front``). A thousand waiting hooks cost a thousand futures, not a
thousand sleeping threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

#: seconds a PreToolUse answer waits for the watcher to have scored the calls before it
SCORE_WAIT = 2.0


class ScoreWaits:
    """``await waits.wait(path, size)``; the watcher calls ``notify()`` (any thread)."""

    def __init__(self, processed: Callable[[Path], int]):
        #: bytes of ``path`` read and scored (-1: not followed yet); two ints read
        #: from the watcher's follower, no lock needed
        self.processed = processed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: list[tuple[Path, int, asyncio.Future]] = []

    async def wait(self, path: Path, size: int, timeout: float = SCORE_WAIT) -> bool:
        """True once ``size`` bytes of ``path`` are scored, False after ``timeout``."""
        if self.processed(path) >= size:
            return True
        loop = asyncio.get_running_loop()
        self._loop = loop
        fut = loop.create_future()
        entry = (path, size, fut)
        self._waiting.append(entry)
        try:
            # asked again once waiting: a notify between the first look and the append
            # found no one to wake
            if self.processed(path) >= size:
                return True
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            return False
        finally:
            try:
                self._waiting.remove(entry)
            except ValueError:
                pass

    def notify(self, *_args: object) -> None:
        """The watcher processed a batch: settle the waits it satisfied (called from
        the watcher's thread; the check itself runs on the server's loop)."""
        loop = self._loop
        if self._waiting and loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._settle)
            except RuntimeError:   # the loop closed meanwhile
                pass

    def _settle(self) -> None:
        for path, size, fut in list(self._waiting):
            if not fut.done() and self.processed(path) >= size:
                fut.set_result(True)

    def __len__(self) -> int:
        return len(self._waiting)
