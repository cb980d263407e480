"""Hide the profiler's native log chatter (Kineto prints `USDT:`/`STAGE:` lines to fd 2).

The C++ side writes straight to file descriptor 2, so the filter swaps fd 2 for a temporary
file around the block and afterwards writes every line that is not chatter back to stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

CHATTER = re.compile(r"^(USDT|STAGE):\S* .*(SyncActivityProfilerHandler|ActivityProfiler).*$")


def keep_line(line: str) -> bool:
    return not CHATTER.match(line)


@contextlib.contextmanager
def filtered_native_stderr() -> Iterator[None]:
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines() if keep_line(line)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
                sys.stderr.flush()
