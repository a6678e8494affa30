"""glibc's malloc told to give big freed buffers back (``watch --ingest``).

glibc adapts its mmap threshold to the largest block freed so far (up to 32 MiB) and
its trim threshold to twice that. The ingest front frees big blocks all the time (an
8 MiB body, the 8 MiB of trace lines it became): after the first one, every buffer
under 8 MiB comes from the heaps instead of a mapping of its own, and each ingest
thread's heap keeps up to 16 MiB of freed memory that no later request may need. With
8 OTLP bodies of 8 MiB, that was ~50 MB of the watcher's RSS after them, and the peak
during them (benchmarks/README.md, "Ingest and soak").

Setting the mmap threshold once turns the adaptation off (``mallopt(3)``): a buffer of
``MMAP_AT`` or more is a mapping of its own, returned to the system when freed, and the
heaps are trimmed above glibc's default 128 KiB. Nothing is decided differently: only
where freed memory goes. Another C library (musl, macOS) is left as it is, and so is a
threshold the user set in the environment (``MALLOC_MMAP_THRESHOLD_``).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

#: mallopt(3)'s parameter number of the mmap threshold
M_MMAP_THRESHOLD = -3
#: blocks this big or bigger get their own mapping (glibc's default starts at 128 KiB)
MMAP_AT = 256 << 10
ENV = "MALLOC_MMAP_THRESHOLD_"


def _glibc() -> ctypes.CDLL | None:
    """The process's C library when it is glibc, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if getattr(libc, "gnu_get_libc_version", None) is None or \
            getattr(libc, "mallopt", None) is None:
        return None
    return libc


def fix_mmap_threshold(size: int = MMAP_AT) -> bool:
    """Fix glibc's mmap threshold at ``size`` for this process (see the module's
    docstring); True when it was set. Idempotent; never raises."""
    if ENV in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    try:
        done = bool(libc.mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(size)))
    except (AttributeError, OSError, ValueError):   # pragma: no cover - an odd libc
        return False
    if not done:   # pragma: no cover - glibc refuses only sizes above 32 MiB
        log.debug("mallopt(M_MMAP_THRESHOLD, %d) refused", size)
    return done


__all__ = ["MMAP_AT", "fix_mmap_threshold"]
