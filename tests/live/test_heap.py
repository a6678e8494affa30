"""glibc's malloc gives big freed buffers back once ``live.heap`` fixed its threshold."""

from __future__ import annotations

import subprocess
import sys

import pytest

from streameval.live import heap

#: after an 8 MiB block is freed, is a 1 MiB block given back to the system when it is
#: freed in turn (its address no longer mapped)? Not when glibc raised its threshold to
#: 8 MiB: the block came from a heap, which keeps it
PROBE = r"""
import ctypes, sys
from streameval.live import heap
fixed = heap.fix_mmap_threshold() if sys.argv[1] == "fix" else None
big = bytearray(8 << 20); del big
block = bytearray((1 << 20) + 4321)
addr = ctypes.addressof((ctypes.c_char * len(block)).from_buffer(block))
del block
mapped = False
for line in open("/proc/self/maps"):
    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
    mapped = mapped or lo <= addr < hi
print(fixed, mapped)
"""


def _probe(mode: str) -> tuple[str, str]:
    fixed, mapped = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True,
                                   text=True, check=True).stdout.split()
    return fixed, mapped


glibc = pytest.mark.skipif(heap._glibc() is None, reason="glibc only")


@glibc
def test_a_big_block_freed_is_given_back_once_the_threshold_is_fixed():
    assert _probe("fix") == ("True", "False")


@glibc
def test_without_it_glibc_keeps_the_freed_block():
    # the behaviour the fix is for: the probe tells the two apart
    assert _probe("plain") == ("None", "True")


def test_a_threshold_the_user_set_is_left_alone(monkeypatch):
    monkeypatch.setenv(heap.ENV, "131072")
    assert heap.fix_mmap_threshold() is False
