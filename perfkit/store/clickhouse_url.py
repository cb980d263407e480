"""ClickHouse store URLs (`--db clickhouse:...`), opening nothing.

    clickhouse:///PATH                       embedded ClickHouse (chdb) on the local folder PATH
                                             (relative after three slashes, absolute after four)
    clickhouse://USER:PASS@HOST:8123/DB      a team's ClickHouse server, over its HTTP interface
                                             (clickhouse-connect's SQLAlchemy dialect)

Both need `pip install 'perfkit[clickhouse]'`. The tables and the write path are in
perfkit.store.clickhouse_schema and perfkit.store.clickhouse_write.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

SCHEME = "clickhouse"
DIALECTS = ("chdb", "clickhousedb")  # SQLAlchemy's names: embedded, server
SERVER_DIALECT = "clickhousedb"


def is_clickhouse(url: str) -> bool:
    return url.startswith(f"{SCHEME}://")


def is_clickhouse_dialect(name: str) -> bool:
    return name in DIALECTS


def embedded_dir(url: str) -> Path | None:
    """The folder of an embedded store (`clickhouse:///PATH`), None for a server URL (a host named)."""
    if not is_clickhouse(url) or urlsplit(url).netloc:
        return None
    rest = url.split("://", 1)[1].partition("?")[0]
    return Path(rest[1:] if rest.startswith("/") else rest)


def server_url(url: str) -> str:
    """The SQLAlchemy URL of a server store (`clickhouse://...` -> `clickhousedb://...`)."""
    return f"{SERVER_DIALECT}://" + url.split("://", 1)[1]
