"""`perfkit store export OUT_DIR`: every table of a store as one zstd Parquet file (rows in
primary-key order, written in bounded batches) plus manifest.json (perfkit.store.manifest).

The store is read, never written (SQLite `mode=ro`, a PostgreSQL read-only REPEATABLE READ
transaction: one snapshot of every table). The folder appears whole or not at all: the files are
written into a temp folder beside OUT_DIR, synced, and the folder renamed into place.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from perfkit.core.errors import StoreError
from perfkit.core.version import __version__
from perfkit.store.api import schema_version_of
from perfkit.store.checksum import TableChecksum
from perfkit.store.engine import describe, describe_url, operational_error
from perfkit.store.manifest import FILE_NAME, Manifest, TableEntry, to_json
from perfkit.store.migrations import SCHEMA_VERSION
from perfkit.store.ordered_rows import MAX_BATCH_BYTES, MAX_BATCH_ROWS, ordered_select, row_batches
from perfkit.store.parquet_types import arrow_schema, as_columns, record_batch
from perfkit.store.read_only import open_read_only
from perfkit.store.transfer_tables import TransferTable, transfer_tables
from perfkit.store.url import normalize_db_url

COMPRESSION = "zstd"


def refuse_output(out_dir: Path) -> None:
    """OUT_DIR must not exist or be an empty folder."""
    if out_dir.is_dir():
        if any(out_dir.iterdir()):
            raise StoreError(f"{out_dir}: folder is not empty; pass a new or empty folder as OUT_DIR "
                             "(an export never overwrites one)")
    elif out_dir.exists() or out_dir.is_symlink():
        raise StoreError(f"{out_dir}: exists and is not a folder; pass a new or empty folder as OUT_DIR")


def open_source(url: str | None) -> Engine:
    """The store at `url`, read-only, at this perfkit's schema version."""
    engine = open_read_only(normalize_db_url(url))
    if engine is None:
        raise StoreError(f"{describe_url(url)}: no store there; pass --db or set PERFKIT_DB")
    version = schema_version_of(engine)
    if version == SCHEMA_VERSION:
        return engine
    if version == 0:
        raise StoreError(f"{describe(engine)}: an empty database, no perfkit store; pass the store's --db")
    raise StoreError(f"{describe(engine)}: the store is at schema version {version}, this perfkit exports "
                     f"{SCHEMA_VERSION}; run any perfkit command on it once where the store is writable "
                     "(e.g. `perfkit runs --db URL`: it upgrades the store), then export again")


def export_store(url: str | None, out_dir: Path, max_batch_rows: int = MAX_BATCH_ROWS,
                 max_batch_bytes: int = MAX_BATCH_BYTES) -> Manifest:
    """Write the store at `url` to `out_dir` (new or empty); returns the manifest written."""
    out_dir = Path(out_dir)
    refuse_output(out_dir)
    engine = open_source(url)
    tmp: Path | None = None
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temp_dir(out_dir)
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="REPEATABLE READ") if engine.dialect.name == "postgresql" \
                else raw
            with conn.begin():
                entries = tuple(_write_table(conn, t, tmp / t.file, max_batch_rows, max_batch_bytes)
                                for t in transfer_tables())
        manifest = Manifest(schema_version=SCHEMA_VERSION, perfkit_version=__version__,
                            created=datetime.now(timezone.utc).isoformat(timespec="seconds"), tables=entries)
        _write_manifest(tmp / FILE_NAME, manifest)
        _fsync(tmp)
        _move_into_place(tmp, out_dir)
        tmp = None
        _fsync(out_dir.parent)
        return manifest
    except DBAPIError as exc:
        raise operational_error(engine, exc, "reading the store") from None
    except OSError as exc:
        raise StoreError(f"{exc.filename or out_dir}: cannot write the export ({exc.strerror or exc}); "
                         "free space or pass another OUT_DIR") from None
    finally:
        engine.dispose()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _write_table(conn: Connection, table: TransferTable, path: Path, max_rows: int, max_bytes: int) -> TableEntry:
    schema = arrow_schema(table.columns)
    acc = TableChecksum(table.kinds)
    sorting = [pq.SortingColumn(table.names.index(k)) for k in table.primary_key]
    with pq.ParquetWriter(path, schema, compression=COMPRESSION, sorting_columns=sorting) as writer:
        for rows in row_batches(conn, table, ordered_select(conn, table), max_rows, max_bytes):
            columns = as_columns(rows, len(table.columns))
            acc.update_columns(columns)
            writer.write_batch(record_batch(schema, columns))
    _fsync(path)
    return TableEntry(name=table.name, file=table.file, rows=acc.rows, checksum=acc.hexdigest(),
                      primary_key=table.primary_key, columns=table.columns)


def _write_manifest(path: Path, manifest: Manifest) -> None:
    path.write_text(json.dumps(to_json(manifest), indent=1) + "\n", encoding="utf-8")
    _fsync(path)


def _temp_dir(out_dir: Path) -> Path:
    """A new folder beside out_dir (mode 0777 less the umask, as `mkdir` makes it)."""
    for _ in range(100):
        tmp = out_dir.with_name(f".{out_dir.name}.{secrets.token_hex(4)}.tmp")
        try:
            tmp.mkdir()
            return tmp
        except FileExistsError:
            continue
    raise StoreError(f"{out_dir.parent}: no free temp folder name; remove the .{out_dir.name}.*.tmp folders there")


def _move_into_place(tmp: Path, out_dir: Path) -> None:
    try:
        os.rename(tmp, out_dir)  # onto a missing or empty folder only
    except OSError:
        refuse_output(out_dir)  # filled meanwhile: that one line
        raise


def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() and hasattr(os, "O_DIRECTORY") else 0)
    with contextlib.suppress(OSError):
        fd = os.open(path, flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
