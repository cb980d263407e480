"""Reading the Parquet run lake: an in-process DuckDB whose views are named like the store's
tables (runs, points, metrics, samples, kernels, perfkit_schema) over the lake's live files, so
every SQLAlchemy Core query of perfkit.store runs on it unchanged (through duckdb_engine).

Live files: per partition folder, the newest compacted folder and every per-run folder it does
not cover (perfkit.store.lake_layout). Each connection lists them anew (no pool), so a run
written or a compaction done is seen by the next connection, whole. `lake.metric_lists` is the
metrics view with each row's samples as one list and its run's time (the fast path of the gate
and History: no join with runs, and the time prunes the sorted files' row groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Double,
    Engine,
    Integer,
    MetaData,
    Table,
    Text,
    bindparam,
    cast,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.pool import NullPool
from sqlalchemy.types import ARRAY

from perfkit.store.lake_layout import (
    LAKE_OPTION,
    TABLES,
    arrow_schema,
    duckdb_type,
    parquet_files_sql,
    partition_folders,
    store_columns,
)
from perfkit.store.schema import SCHEMA_VERSION

metric_lists = Table(
    "metric_lists", MetaData(),
    Column("id", Integer, primary_key=True), Column("run_id", Text), Column("name", Text),
    Column("value", Double), Column("samples", ARRAY(Double)), Column("created_epoch", Double), schema="lake",
)


def lake_engine(folder: Path) -> Engine:
    """An engine over the lake at `folder` (views only: writes go through perfkit.store.lake_write)."""
    engine = create_engine("duckdb:///:memory:", poolclass=NullPool,
                           execution_options={LAKE_OPTION: str(folder)})

    @event.listens_for(engine, "connect")
    def _views(dbapi_conn: Any, _record: Any) -> None:
        for sql in view_sql(folder):
            dbapi_conn.execute(sql)

    return engine


def one_of(column: Any, values: Sequence[str]) -> Any:
    """`column IN (values)` as DuckDB runs it fastest on a lake: a semi-join with one list parameter
    (an IN list of a thousand parameters is tested value by value on every row scanned)."""
    listed = cast(bindparam(None, list(values), type_=ARRAY(Text)), ARRAY(Text))
    return column.in_(select(func.unnest(listed)))


def is_lake_conn(conn: Connection) -> bool:
    """Whether `conn` reads a Parquet lake (its engine made by lake_engine)."""
    return conn.engine.get_execution_options().get(LAKE_OPTION) is not None


def live_folders(folder: Path) -> list[Path]:
    """The folders whose files are the lake's content now (see the module's doc)."""
    out: list[Path] = []
    if not folder.is_dir():
        return out
    for part in sorted(folder.glob("spec=*/device=*")):
        newest, _, runs = partition_folders(part)
        out += ([newest] if newest else []) + runs
    return out


def view_sql(folder: Path) -> list[str]:
    """CREATE VIEW statements for the lake's tables over its live files."""
    dirs = live_folders(folder)
    sql = ["SET parquet_metadata_cache = true", "CREATE SCHEMA lake", f"CREATE VIEW perfkit_schema AS SELECT 1::INTEGER AS id, {SCHEMA_VERSION}::INTEGER AS version"]
    for table in TABLES:
        fields = list(arrow_schema(table))
        cols = ", ".join(f'"{f.name}"' for f in fields)
        if dirs:
            source = f"SELECT {cols} FROM read_parquet({parquet_files_sql(dirs, table)}, hive_partitioning = false)"
        else:  # an empty lake: typed, empty
            typed = ", ".join(f'CAST(NULL AS {duckdb_type(f)}) AS "{f.name}"' for f in fields)
            source = f"SELECT {typed} WHERE false"
        sql.append(f"CREATE VIEW lake.{table} AS {source}")
        keep = ", ".join(f'"{c}"' for c in store_columns(table))
        sql.append(f"CREATE VIEW {table} AS SELECT {keep} FROM lake.{table}")
    sql.append("CREATE VIEW lake.metric_lists AS SELECT id, run_id, name, value, samples, created_epoch "
               "FROM lake.metrics")
    sql.append("CREATE VIEW samples AS SELECT id AS metric_id, unnest(range(len(samples))) AS idx, "
               "unnest(samples) AS value FROM lake.metrics")
    return sql
