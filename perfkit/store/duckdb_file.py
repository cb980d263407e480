"""Opening a DuckDB store file (`duckdb:///FILE`, SQLAlchemy dialect `duckdb_engine`).

DuckDB lets one process at a time open a file for writing (other processes then cannot open it
at all): a second perfkit waits for the file's lock up to the busy timeout (as SQLite's writers
do), then fails with one line. Within one process every connection to a file must use the same
configuration, so a file is opened read-write whenever it can be written (perfkit's read paths
never write); read-only only where the file or its folder cannot be written.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from perfkit.core.errors import StoreError
from perfkit.store.store_file import check_store_file

DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of a DuckDB database file
LOCK_POLL_S = 0.05


def check_duckdb_file(path: Path) -> None:
    """Refuse a path that exists but is not a DuckDB database (a directory, a SQLite file, text)."""
    check_store_file(path, "DuckDB", 12, lambda head: head[8:12] == DUCKDB_MAGIC)


def wait_for_lock(engine: Engine, path: Path, busy_s: float, backend: str = "DuckDB") -> None:
    """Connections of `engine` wait up to `busy_s` for another process's lock on `path` (a DuckDB
    file, or an embedded ClickHouse folder: `backend`)."""

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        deadline = time.monotonic() + busy_s
        while True:
            try:
                return dialect.connect(*cargs, **cparams)
            except Exception as exc:  # duckdb.IOException: the driver is imported by the dialect only
                text = str(exc)
                if "already initialized with path" in text:  # chdb: one folder per process
                    raise StoreError(f"{path}: cannot open the ClickHouse store: this process has another "
                                     "embedded ClickHouse folder open, and chdb opens one per process; run "
                                     "the two stores' commands apart (e.g. store export, then store import)"
                                     ) from None
                # chdb: another process's server holds the folder's lock (its message does not always say so)
                if "lock" not in text.lower() and "Error initializing EmbeddedServer" not in text:
                    raise
                if time.monotonic() >= deadline:
                    what = "file" if backend == "DuckDB" else "folder"
                    raise StoreError(f"{path}: cannot open the {backend} store ({text.splitlines()[0][:200]}); "
                                     f"{backend} lets one process at a time use a {what}: retry when the other "
                                     "is done, or use PostgreSQL for concurrent writers") from None
                time.sleep(LOCK_POLL_S)


def duckdb_writable(path: Path) -> bool:
    """Whether the file (or, while it does not exist, its folder) can be written."""
    return os.access(path, os.W_OK) if path.exists() else os.access(path.parent, os.W_OK)
