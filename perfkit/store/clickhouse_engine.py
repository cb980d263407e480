"""Opening a ClickHouse store (URLs: perfkit.store.clickhouse_url).

Embedded (`clickhouse:///PATH`, chdb): ClickHouse runs inside the perfkit process on the folder
PATH. chdb lets one process at a time open a folder (a lock file), and one folder per process:
connections are not pooled, so the folder is free between a command's statements, and a second
perfkit waits for it up to the busy timeout (as with DuckDB), then fails with one line.

Server (`clickhouse://USER:PASS@HOST:8123/DB`): clickhouse-connect over HTTP, with the connect
timeout and the statement timeout of perfkit.store.engine.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from perfkit.core.errors import StoreError, shorten
from perfkit.store.clickhouse_url import embedded_dir, server_url

MARKERS = ("metadata", "store", "status")  # what a ClickHouse data folder holds


def missing_driver(exc: ImportError) -> StoreError:
    return StoreError(f"ClickHouse driver missing ({exc}); pip install 'perfkit[clickhouse]'")


def clickhouse_engine(full: str, busy_s: float, connect_s: float, statement_s: float) -> Engine:
    folder = embedded_dir(full)
    if folder is None:
        return _server_engine(full, connect_s, statement_s)
    return _embedded_engine(folder, busy_s)


def check_embedded_folder(folder: Path) -> None:
    """Refuse a path that is a file, or a folder with other things in it than a ClickHouse store."""
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"{folder}: not a folder; a clickhouse:/// store is a folder ClickHouse keeps its "
                         "data in, pass another --db")
    if folder.is_dir() and any(folder.iterdir()) and not any((folder / m).exists() for m in MARKERS):
        raise StoreError(f"{folder}: a folder that is not a ClickHouse store (no metadata/ or store/ in it); "
                         "pass a new or empty folder, or the store's folder")


def _embedded_engine(folder: Path, busy_s: float) -> Engine:
    try:
        import chdb_sqlalchemy  # noqa: F401
    except ImportError as exc:
        raise missing_driver(exc) from None
    from perfkit.store.duckdb_file import wait_for_lock

    path = folder.resolve()
    engine = create_engine(f"chdb:///{path}", poolclass=NullPool)
    wait_for_lock(engine, path, busy_s, backend="ClickHouse")
    return engine


def _server_engine(full: str, connect_s: float, statement_s: float) -> Engine:
    try:
        import clickhouse_connect  # noqa: F401
    except ImportError as exc:
        raise missing_driver(exc) from None
    # the driver logs each failed request; perfkit says what failed in one line (below)
    logging.getLogger("clickhouse_connect").addHandler(logging.NullHandler())
    args: dict[str, Any] = {"connect_timeout": max(1, math.ceil(connect_s)),
                            "send_receive_timeout": max(1, math.ceil(statement_s))}
    engine = create_engine(server_url(full), connect_args=args, pool_pre_ping=False)
    _one_line_connect_errors(engine, full)
    return engine


def _one_line_connect_errors(engine: Engine, full: str) -> None:
    shown = make_url(full).render_as_string(hide_password=True)

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:  # clickhouse_connect's errors: the driver is imported by the dialect only
            raise StoreError(f"{shown}: cannot connect to the ClickHouse server ({connect_reason(exc)}); check "
                             "the --db URL (clickhouse://USER:PASS@HOST:8123/DB, the HTTP port), that the "
                             "server is up, and the network") from None


def connect_reason(exc: Exception) -> str:
    """The OS's reason in a driver's long message (`[Errno 111] Connection refused`), else its start."""
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\] [^'\")\]]+", text)
    if found:
        return found.group(0).strip()
    lines = text.splitlines()
    return shorten(lines[0] if lines else type(exc).__name__, 200)
