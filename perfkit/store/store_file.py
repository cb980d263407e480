"""A store given as a file path: refused in one line when the path exists but is not a database of
the kind its URL names (a directory, text, a file of the other backend, a truncated file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from perfkit.core.errors import StoreError


def check_store_file(path: Path, kind: str, head_len: int, is_kind: Callable[[bytes], bool]) -> None:
    """Raise StoreError unless `path` is absent, empty or starts with bytes `is_kind` accepts
    (its first `head_len` bytes)."""
    if not path.exists():
        return
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a store; pass a file path as --db")
    try:
        with path.open("rb") as fh:
            head = fh.read(head_len)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store ({exc.strerror}); check its permissions") from None
    if head and not is_kind(head):
        raise StoreError(f"{path}: not a {kind} database (the file starts with {head[:8]!r}); "
                         "pass another --db or move the file aside")
