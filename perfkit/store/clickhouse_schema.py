"""The store's tables in ClickHouse: one MergeTree table per store table holding every row ever
written (`<table>_all`), and views named like the store's tables that show each run's rows of
one writer only, once its `runs` row is there. So every SQLAlchemy Core query of perfkit.store
runs on the views unchanged, and what a ClickHouse store lacks (transactions, unique and foreign
keys, auto-increment ids) is made up for by the write path (perfkit.store.clickhouse_write):

- a writer tags each row with its own random `writer` token and inserts a run's points, metrics
  and kernels first, its `runs` row last: a run is visible whole or not at all (rows of a writer
  that died before its `runs` row stay in the `_all` tables, invisible);
- two writers of one run id (a race: both found it absent) both insert; `runs_live` keeps, per
  run id, the `runs` row written first (`written_ns`, then the token: `LIMIT 1 BY`, independent
  of background merges), and every view shows only that writer's rows: never duplicates;
- ids are derived from the run id (perfkit.store.lake_layout.id_base), never from a sequence;
- metric rows hold their raw samples as one array (`samples`); the `samples` view unrolls them,
  and `metric_samples` shows them as they are (one row per metric row: the gate's and History's
  fast path, perfkit.store.sample_arrays).

Columns and nullability come from perfkit.store.schema (Integer Int64, Float Float64, Boolean
Bool, text String; Nullable where the store's column is).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Connection, Double, Float, Integer, MetaData, Table, text
from sqlalchemy.types import ARRAY

from perfkit.store import schema

TABLES = ("runs", "points", "metrics", "kernels")
SORT_KEYS = {"runs": "run_id", "points": "(run_id, id)", "metrics": "(name, run_id)", "kernels": "(run_id, id)"}
EXTRA_COLUMNS = {
    "runs": [("methodology", "String"), ("writer", "String"), ("written_ns", "Int64")],
    "points": [("writer", "String")],
    "metrics": [("samples", "Array(Float64)"), ("gpu", "String"), ("created_epoch", "Float64"),
                ("commit", "Nullable(String)"), ("methodology", "String"), ("writer", "String")],
    "kernels": [("writer", "String")],
}
INTERNAL = frozenset([f"{t}_all" for t in TABLES] + ["runs_live", "metric_samples"])  # not the store's tables: what they show
LIVE = "(run_id, writer) IN (SELECT run_id, writer FROM runs_live)"


metric_samples = Table("metric_samples", MetaData(), Column("id", Integer, primary_key=True),
                       Column("samples", ARRAY(Double)))


def ch_type(column: Column) -> str:  # type: ignore[type-arg]
    if isinstance(column.type, Integer):
        base = "Int64"
    elif isinstance(column.type, Float):
        base = "Float64"
    elif isinstance(column.type, Boolean):
        base = "Bool"
    else:
        base = "String"
    return f"Nullable({base})" if column.nullable and not column.primary_key else base


def all_columns(table: str) -> list[tuple[str, str]]:
    """(name, ClickHouse type) of `<table>_all`: the store's columns, then the extras."""
    return [(c.name, ch_type(c)) for c in getattr(schema, table).columns] + EXTRA_COLUMNS[table]


def _cols(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def ddl() -> list[str]:
    """CREATE statements (IF NOT EXISTS: concurrent openers and reopening are harmless)."""
    out = []
    for table in TABLES:
        cols = ", ".join(f'"{n}" {t}' for n, t in all_columns(table))
        out.append(f"CREATE TABLE IF NOT EXISTS {table}_all ({cols}) ENGINE = MergeTree ORDER BY {SORT_KEYS[table]}")
    out.append("CREATE VIEW IF NOT EXISTS runs_live AS SELECT run_id, writer FROM runs_all "
               "ORDER BY run_id, written_ns, writer LIMIT 1 BY run_id")
    for table in TABLES:
        keep = _cols([c.name for c in getattr(schema, table).columns])
        out.append(f"CREATE VIEW IF NOT EXISTS {table} AS SELECT {keep} FROM {table}_all WHERE {LIVE}")
    out.append("CREATE VIEW IF NOT EXISTS samples AS SELECT id AS metric_id, toInt64(i - 1) AS idx, v AS value "
               f"FROM metrics_all ARRAY JOIN samples AS v, arrayEnumerate(samples) AS i WHERE {LIVE}")
    out.append(f"CREATE VIEW IF NOT EXISTS metric_samples AS SELECT id, samples FROM metrics_all WHERE {LIVE}")
    out.append(f"CREATE VIEW IF NOT EXISTS perfkit_schema AS SELECT toInt64(1) AS id, "
               f"toInt64({schema.SCHEMA_VERSION}) AS version")
    return out


def create_tables(conn: Connection) -> None:
    for sql in ddl():
        conn.execute(text(sql))
