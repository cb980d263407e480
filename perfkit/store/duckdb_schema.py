"""The current schema (perfkit.store.schema) as DuckDB takes it, created in one step.

DuckDB differs from SQLite and PostgreSQL in three ways that matter here, so a new DuckDB store
is created at the current version at once instead of step by step (a table that another table
references cannot be altered in DuckDB, so the v2 step's ALTER TABLE would be refused):
- no SERIAL: each integer id takes its next value from a sequence (`<table>_<column>_seq`) as
  a server default, so the inserts of perfkit.store.write work unchanged;
- no ON DELETE CASCADE (perfkit never deletes rows): the foreign keys are plain;
- FLOAT is 4 bytes: every float column is DOUBLE (8 bytes), as in SQLite and PostgreSQL.
"""

from __future__ import annotations

from sqlalchemy import Connection, DefaultClause, Double, Float, MetaData, Sequence

from perfkit.store import schema


def duckdb_metadata() -> MetaData:
    """A copy of the current schema adapted to DuckDB (see the module's doc)."""
    md = MetaData()
    for table in schema.metadata.sorted_tables:
        copy = table.to_metadata(md)
        for fk in copy.foreign_keys:
            fk.ondelete = None
            if fk.constraint is not None:
                fk.constraint.ondelete = None
        for column in copy.columns:
            if isinstance(column.type, Float):
                column.type = Double()
        auto = table.autoincrement_column
        if auto is not None:
            column = copy.c[auto.name]
            column.autoincrement = False  # not SERIAL: the sequence's next value instead
            seq = Sequence(f"{copy.name}_{auto.name}_seq", metadata=md)
            DefaultClause(seq.next_value())._set_parent_with_dispatch(column)
    return md


def create_current(conn: Connection) -> None:
    """Create every table, index and id sequence of the current schema in an empty DuckDB."""
    duckdb_metadata().create_all(conn)
