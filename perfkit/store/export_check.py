"""Checking a store export before an import touches any store: its manifest against this
perfkit's schema, and every Parquet file against its manifest entry (columns and their types, row
count, no NULL where the schema forbids one, the checksum of the rows). Any disagreement is one
line `FILE: what; what to do` (StoreError, exit 2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from perfkit.core.errors import StoreError, echo
from perfkit.core.table_file import reason
from perfkit.store.checksum import TableChecksum
from perfkit.store.manifest import FILE_NAME, REEXPORT, Manifest, TableEntry, read_manifest
from perfkit.store.migrations import SCHEMA_VERSION
from perfkit.store.parquet_types import ARROW_TYPES
from perfkit.store.transfer_tables import TransferTable, transfer_tables

READ_BATCH_ROWS = 50_000


@dataclass(frozen=True)
class CheckedExport:
    """An export found whole: its manifest, the run ids it holds, each id table's least id."""

    in_dir: Path
    manifest: Manifest
    run_ids: tuple[str, ...]
    least_ids: dict[str, int | None]


def check_export(in_dir: Path) -> CheckedExport:
    in_dir = Path(in_dir)
    if not in_dir.is_dir():
        what = "no such folder" if not in_dir.exists() else "not a folder"
        raise StoreError(f"{in_dir}: {what}; pass the folder `perfkit store export` wrote")
    manifest = read_manifest(in_dir)
    where = in_dir / FILE_NAME
    if manifest.schema_version != SCHEMA_VERSION:
        raise StoreError(f"{where}: exported at store schema version {manifest.schema_version}, this perfkit "
                         f"imports {SCHEMA_VERSION}; import it with perfkit {manifest.perfkit_version}, or "
                         "upgrade the source store and export it again")
    tables = transfer_tables()
    known = {t.name for t in tables}
    extra = [t.name for t in manifest.tables if t.name not in known]
    if extra:
        raise StoreError(f"{where}: table {echo(extra[0], 60)} is not in this perfkit's store schema; "
                         f"import with perfkit {manifest.perfkit_version}, which exported it")
    run_ids: tuple[str, ...] = ()
    least_ids: dict[str, int | None] = {}
    for table in tables:
        entry = manifest.table(table.name)
        if entry is None:
            raise StoreError(f"{where}: table {table.name} missing; the export is incomplete, {REEXPORT}")
        _check_entry(where, table, entry)
        ids, least = _check_file(in_dir / entry.file, table, entry)
        if table.name == "runs":
            run_ids = ids
        if table.id_column is not None:
            least_ids[table.name] = least
    return CheckedExport(in_dir=in_dir, manifest=manifest, run_ids=run_ids, least_ids=least_ids)


def _check_entry(where: Path, table: TransferTable, entry: TableEntry) -> None:
    """The manifest's columns of `table` are the schema's (names and kinds) and its key the same."""
    declared = {c.name: c.kind for c in table.columns}
    listed = {c.name: c.kind for c in entry.columns}
    unknown = [n for n in listed if n not in declared]
    if unknown:
        raise StoreError(f"{where}: table {table.name}: unknown column {echo(unknown[0], 60)} (not in this "
                         "perfkit's store schema); import with the perfkit that exported it, or " + REEXPORT)
    lacking = [n for n in declared if n not in listed]
    if lacking:
        raise StoreError(f"{where}: table {table.name}: no column {lacking[0]}; {REEXPORT}")
    wrong = [n for n in declared if listed[n] != declared[n]]
    if wrong:
        raise StoreError(f"{where}: table {table.name}: column {wrong[0]} is {listed[wrong[0]]}, this perfkit's "
                         f"schema has {declared[wrong[0]]}; {REEXPORT}")
    if tuple(entry.primary_key) != table.primary_key:
        raise StoreError(f"{where}: table {table.name}: primary key {list(entry.primary_key)}, this perfkit's "
                         f"schema has {list(table.primary_key)}; {REEXPORT}")


def _open(path: Path) -> pq.ParquetFile:
    if not path.is_file():
        what = "missing" if not path.exists() else "not a file"
        raise StoreError(f"{path}: {what}; the export is incomplete, {REEXPORT}")
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StoreError(f"{path}: not a readable Parquet file ({reason(exc)}); {REEXPORT}") from None


def _check_schema(path: Path, table: TransferTable, schema: pa.Schema) -> None:
    names = set(table.names)
    unknown = [n for n in schema.names if n not in names]
    if unknown:
        raise StoreError(f"{path}: unknown column {echo(unknown[0], 60)} (not in table {table.name}); "
                         + REEXPORT)
    for column in table.columns:
        if column.name not in schema.names:
            raise StoreError(f"{path}: no column {column.name}; {REEXPORT}")
        found = schema.field(column.name).type
        if found != ARROW_TYPES[column.kind]:
            raise StoreError(f"{path}: column {column.name} holds {found}, not {ARROW_TYPES[column.kind]}; "
                             + REEXPORT)


def _check_file(path: Path, table: TransferTable, entry: TableEntry) -> tuple[tuple[str, ...], int | None]:
    """Check one Parquet file; returns the run ids it holds (runs only) and its least id."""
    handle = _open(path)
    try:
        _check_schema(path, table, handle.schema_arrow)
        if handle.metadata.num_rows != entry.rows:
            raise StoreError(f"{path}: {handle.metadata.num_rows} rows, {FILE_NAME} says {entry.rows}; the "
                             f"file was altered or truncated, {REEXPORT}")
        acc = TableChecksum(table.kinds)
        ids: list[str] = []
        least: int | None = None
        required = [c.name for c in table.columns if not c.nullable]
        for batch in handle.iter_batches(batch_size=READ_BATCH_ROWS, columns=list(table.names)):
            for name in required:
                if batch.column(name).null_count:
                    raise StoreError(f"{path}: column {name} holds NULL, which table {table.name} forbids; "
                                     + REEXPORT)
            acc.update_columns([batch.column(name).to_pylist() for name in table.names])
            if table.name == "runs":
                ids.extend(batch.column("run_id").to_pylist())
            if table.id_column is not None and batch.num_rows:
                low = pc.min(batch.column(table.id_column)).as_py()
                least = low if least is None else min(least, low)
    except (pa.ArrowException, OSError) as exc:
        raise StoreError(f"{path}: not a readable Parquet file ({reason(exc)}); {REEXPORT}") from None
    finally:
        handle.close()
    if acc.rows != entry.rows or acc.hexdigest() != entry.checksum:
        raise StoreError(f"{path}: its rows do not match the checksum in {FILE_NAME} ({acc.hexdigest()[:19]}… "
                         f"vs {entry.checksum[:19]}…); the file was altered, {REEXPORT}")
    return tuple(ids), least
