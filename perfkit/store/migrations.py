"""Schema versions of the store and the steps between them.

Each step is frozen: it creates exactly what that version added, so a store made by any older
perfkit is brought to SCHEMA_VERSION in order, inside one transaction (SQLite and PostgreSQL
both have transactional DDL); a new DuckDB store is created at the current version in one step
(perfkit.store.duckdb_schema). Concurrent openers serialise on the write lock (SQLite) or an
advisory lock (PostgreSQL) and re-read the version inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
    text,
)
from sqlalchemy.exc import OperationalError, ProgrammingError

from perfkit.core.errors import StoreError
from perfkit.store import schema
from perfkit.store.catalog import column_names, table_names
from perfkit.store.duckdb_schema import create_current
from perfkit.store.engine import describe, operational_error, write_tx

SCHEMA_VERSION = schema.SCHEMA_VERSION
_PG_LOCK_KEY = 0x7065726B  # "perk"


def _v1(conn: Connection) -> None:
    """runs, points, metrics with raw samples."""
    md = MetaData()
    Table("perfkit_schema", md, Column("id", Integer, primary_key=True),
          Column("version", Integer, nullable=False))
    Table(
        "runs", md,
        Column("run_id", String(128), primary_key=True),
        Column("created", String(40), nullable=False),
        Column("created_epoch", Float, nullable=False),
        Column("commit", String(64)), Column("branch", String(255)), Column("dirty", Boolean),
        Column("gpu", String(255), nullable=False), Column("gpu_driver", String(64)),
        Column("host", String(255)), Column("device", String(16), nullable=False),
        Column("status", String(16), nullable=False), Column("spec_hash", String(128)),
        Column("spec_path", Text), Column("env_json", Text, nullable=False),
        Column("spec_json", Text, nullable=False), Column("run_json", Text, nullable=False),
        Column("record_schema", Integer, nullable=False),
    )
    Table(
        "points", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(128), ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
        Column("position", Integer, nullable=False), Column("key", Text, nullable=False),
        Column("kind", String(64), nullable=False), Column("workload", String(255), nullable=False),
        Column("status", String(16), nullable=False), Column("params_json", Text, nullable=False),
        Column("point_json", Text, nullable=False),
        UniqueConstraint("run_id", "key", name="uq_points_run_key"),
    )
    m = Table(
        "metrics", md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("run_id", String(128), ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
        Column("point_key", Text), Column("name", Text, nullable=False),
        Column("value", Float, nullable=False), Column("unit", String(32), nullable=False),
        Column("direction", String(8), nullable=False), Column("n", Integer, nullable=False),
        UniqueConstraint("run_id", "name", name="uq_metrics_run_name"),
    )
    from sqlalchemy import Index

    Index("ix_metrics_name", m.c.name)
    Table(
        "samples", md,
        Column("metric_id", Integer, ForeignKey("metrics.id", ondelete="CASCADE"), primary_key=True),
        Column("idx", Integer, primary_key=True), Column("value", Float, nullable=False),
    )
    md.create_all(conn)


def _v2(conn: Connection) -> None:
    """Where a run came from and when it was stored; kernel tables; a history index."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN source VARCHAR(32) NOT NULL DEFAULT 'perfkit'"))
    conn.execute(text("ALTER TABLE runs ADD COLUMN stored VARCHAR(40) NOT NULL DEFAULT ''"))
    conn.execute(text("UPDATE runs SET stored = created"))
    schema.kernels.create(conn)  # with its index
    next(i for i in schema.runs.indexes if i.name == "ix_runs_gpu_created").create(conn)


STEPS: tuple[tuple[int, Callable[[Connection], None]], ...] = ((1, _v1), (2, _v2))


def current_version(conn: Connection) -> int:
    """0 for an empty database; raises StoreError for a database that is not a perfkit store."""
    names = {n for n in table_names(conn) if not n.startswith("sqlite_")}
    if "perfkit_schema" not in names:
        if names:  # another application's database: perfkit's tables are never added to it
            shown = ", ".join(sorted(names)[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            raise StoreError(
                f"{describe(conn.engine)}: holds tables of another application ({shown}) and no perfkit_schema; "
                "not a perfkit store, pass another --db (a new file, or an empty database)"
            )
        return 0
    check_tables(conn, (schema.schema_info,))  # its version column gone: one line, not a failed query
    row = conn.execute(select(schema.schema_info.c.version)).first()
    return int(row[0]) if row else 0


def check_tables(conn: Connection, tables: Sequence[Table] | None = None) -> None:
    """StoreError naming the first table or column of this perfkit's schema (or of `tables`) the
    store lacks (a store damaged or altered by hand): one line before any query fails on it."""
    present = set(table_names(conn))
    for table in schema.metadata.sorted_tables if tables is None else tables:
        if table.name not in present:
            raise StoreError(f"{describe(conn.engine)}: table {table.name} is missing; the store is damaged, "
                             "restore it from a backup or pass another --db")
        columns = set(column_names(conn, table.name))
        lacking = [c.name for c in table.columns if c.name not in columns]
        if lacking:
            raise StoreError(f"{describe(conn.engine)}: table {table.name} has no column {lacking[0]}; the store "
                             "is damaged, restore it from a backup or pass another --db")


def migrate(engine: Engine, target: int = SCHEMA_VERSION) -> int:
    """Bring the store to `target` (default: current); returns the version it was at."""
    try:
        with write_tx(engine) as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
            before = current_version(conn)
            check_not_newer(engine, before)
            if before == 0 and engine.dialect.name == "duckdb" and target == SCHEMA_VERSION:
                create_current(conn)  # DuckDB cannot take the steps' ALTER TABLE (duckdb_schema)
                _set_version(conn, SCHEMA_VERSION)
                before_steps = SCHEMA_VERSION
            else:
                before_steps = before
            for version, step in STEPS:
                if before_steps < version <= target:
                    step(conn)
                    _set_version(conn, version)
            if target == SCHEMA_VERSION:
                check_tables(conn)
            return before
    except (OperationalError, ProgrammingError) as exc:
        raise operational_error(engine, exc, "migrating the store") from None


def check_not_newer(engine: Engine, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(f"{describe(engine)}: store schema version {version} is newer than this "
                         f"perfkit reads ({SCHEMA_VERSION}); upgrade perfkit")


def _set_version(conn: Connection, version: int) -> None:
    table = schema.schema_info
    if conn.execute(select(table.c.id)).first() is None:
        conn.execute(table.insert().values(id=1, version=version))
    else:
        conn.execute(table.update().where(table.c.id == 1).values(version=version))
