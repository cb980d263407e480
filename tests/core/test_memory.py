"""perfkit.core.memory: freed large arrays go back to the OS (glibc), a no-op elsewhere."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfkit.core.memory import map_large_blocks, release_freed

CHILD = """
import sys
import numpy as np
from perfkit.core.memory import map_large_blocks

def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024

big = np.ones((16 << 20) // 8)  # freeing a block under 32 MiB raises glibc's own mmap threshold to its size
del big
if sys.argv[1] == "on":
    assert map_large_blocks()
blocks = [np.ones((2 << 20) // 8) for _ in range(50)]  # 100 MiB in 2 MiB arrays
pins = [np.ones(16) for _ in range(2000)]  # small allocations after them keep the heap's top in use
before = rss_mib()
del blocks
print(before - rss_mib())
"""


def _freed_mib(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def test_freed_large_arrays_leave_the_process() -> None:
    if not sys.platform.startswith("linux") or not map_large_blocks():
        pytest.skip("needs glibc's mallopt")
    assert _freed_mib("on") > 90  # every 2 MiB array was its own mapping, unmapped when freed
    assert release_freed() is True
