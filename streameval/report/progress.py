"""Progress of a batch on a terminal."""

from __future__ import annotations

import sys
import time
from typing import IO


class Progress:
    """A one-line ``\\r`` progress display on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, enabled: bool, stream: IO[str] | None = None):
        self.total, self.enabled = total, enabled
        self.stream = stream or sys.stderr
        self.done = self.errors = 0
        self.started = self._shown = time.monotonic()

    def update(self, errors: int) -> None:
        self.done += 1
        self.errors += errors
        now = time.monotonic()
        if self.enabled and (now - self._shown >= 0.1 or self.done == self.total):
            self._shown = now
            rate = self.done / max(now - self.started, 1e-9)
            self.stream.write(f"\r{self.done}/{self.total} instances, {self.errors} errors, "
                              f"{rate:.1f}/s ")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
