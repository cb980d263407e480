"""The first bytes of a file, gunzipped when it is gzip: what the loaders sniff a format from."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

SNIFF_BYTES = 4096


def file_head(path: str | Path, size: int = SNIFF_BYTES) -> bytes:
    """Up to `size` bytes from the start of `path` (of its content when gzipped); b"" when the
    file cannot be read (missing, a folder, a damaged gzip): the loader then says what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(size)
            if head[:2] == b"\x1f\x8b":
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    head = gz.read(size)
    except (OSError, EOFError, zlib.error):
        return b""
    return head
