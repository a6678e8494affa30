"""Progress of a batch, wherever it runs: a one-line display with its rate and time left
on a terminal, and a line every ``every`` seconds (and one at the end) when stderr is a
file, a pipe or a CI log, so a long replay in a job says how far it is.

The clock is passed in: what is shown is a function of the calls and the times they
came at, and the tests give both.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO

__all__ = ["Progress", "duration"]

#: seconds between two lines when not on a terminal
LOG_EVERY = 10.0
#: seconds between two redraws on a terminal
REDRAW_EVERY = 0.1


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """``update(errors)`` once per finished job; ``close()`` at the end.

    ``tty``: draw one ``\\r`` line (stderr is a terminal); else print a line every
    ``every`` seconds. ``quiet``: nothing at all.
    """

    def __init__(self, total: int, *, tty: bool, quiet: bool = False, stream: IO[str] | None = None,
                 every: float = LOG_EVERY, clock: Callable[[], float] = time.monotonic,
                 what: str = "instances", prefix: str = "streameval replay: "):
        self.total = total
        self.tty, self.quiet = tty, quiet
        self.stream = stream or sys.stderr
        self.every, self.clock = every, clock
        self.what, self.prefix = what, prefix
        self.done = self.errors = 0
        self.started = self._shown = clock()
        self._drawn = False

    def _text(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        pct = 100.0 * self.done / self.total if self.total else 100.0
        text = (f"{self.done}/{self.total} {self.what} ({pct:.0f}%), {self.errors} errors, "
                f"{rate:.1f}/s")
        if self.done < self.total:
            text += f", about {duration((self.total - self.done) / rate)} left" if self.done \
                else ", time left not known yet"
        return text

    def update(self, errors: int = 0, n: int = 1) -> None:
        self.done += n
        self.errors += errors
        if self.quiet:
            return
        now = self.clock()
        if self.tty:
            if now - self._shown >= REDRAW_EVERY or self.done == self.total:
                self._shown = now
                self.stream.write(f"\r{self._text(now)} ")
                self.stream.flush()
                self._drawn = True
        elif now - self._shown >= self.every and self.done < self.total:
            self._shown = now
            print(f"{self.prefix}{self._text(now)}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.quiet:
            return
        now = self.clock()
        if self.tty:
            if self._drawn:
                self.stream.write("\n")
                self.stream.flush()
            return
        if self.done:
            print(f"{self.prefix}{self.done}/{self.total} {self.what} in "
                  f"{duration(now - self.started)}, {self.errors} errors", file=self.stream,
                  flush=True)
