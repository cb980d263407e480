"""The store's tables as `perfkit store export / import` move them: dependency order, each
column's kind (checksum.KINDS) and Arrow type, the primary key, the autoincrement id a merge
renumbers and the foreign keys that follow it. Derived from perfkit.store.schema, never listed
by hand, so a new column or table is moved as soon as the schema has it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Boolean, Column, Float, Integer, String, Table

from perfkit.store import schema

SCHEMA_TABLE = schema.schema_info.name  # exported for completeness; an import's target keeps its own


@dataclass(frozen=True)
class TransferColumn:
    name: str
    kind: str  # checksum.KINDS
    nullable: bool


@dataclass(frozen=True)
class TransferTable:
    name: str
    columns: tuple[TransferColumn, ...]
    primary_key: tuple[str, ...]
    id_column: str | None  # an autoincrement integer key (points.id): renumbered when merging
    references: tuple[tuple[str, str], ...]  # (column, table) pairs: this column holds that table's id
    run_column: str | None  # the column naming the run a row belongs to ("run_id"), if any

    @property
    def file(self) -> str:
        return f"{self.name}.parquet"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(c.kind for c in self.columns)


def kind_of(column: Column) -> str:  # type: ignore[type-arg]
    """The checksum kind of a schema column (Boolean before Integer: no SQLAlchemy type is both)."""
    kind = column.type
    if isinstance(kind, Boolean):
        return "bool"
    if isinstance(kind, Integer):
        return "int"
    if isinstance(kind, Float):
        return "float"
    if isinstance(kind, String):  # Text too
        return "string"
    raise TypeError(f"{column.table.name}.{column.name}: no transfer kind for {kind!r}")  # pragma: no cover


def _id_column(table: Table) -> str | None:
    keys = list(table.primary_key.columns)
    if len(keys) == 1 and isinstance(keys[0].type, Integer) and keys[0].autoincrement in (True, "auto"):
        return str(keys[0].name) if not keys[0].foreign_keys else None
    return None


def _table(table: Table) -> TransferTable:
    references = tuple(
        (str(col.name), str(fk.column.table.name))
        for col in table.columns for fk in col.foreign_keys
        if _id_column(fk.column.table) == fk.column.name  # type: ignore[arg-type]
    )
    return TransferTable(
        name=table.name,
        columns=tuple(TransferColumn(str(c.name), kind_of(c), bool(c.nullable)) for c in table.columns),
        primary_key=tuple(str(c.name) for c in table.primary_key.columns),
        id_column=None if table.name == SCHEMA_TABLE else _id_column(table),
        references=references,
        run_column="run_id" if "run_id" in table.columns else None,
    )


def transfer_tables() -> tuple[TransferTable, ...]:
    """Every table of the current schema, parents before children."""
    return tuple(_table(t) for t in schema.metadata.sorted_tables)


def sql_table(name: str) -> Table:
    return schema.metadata.tables[name]
