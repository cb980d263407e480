"""The Arrow type of each column kind of a store table, and a table's Arrow schema (what an
export's Parquet file holds, and what an import expects to find in it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from perfkit.store.transfer_tables import TransferColumn

ARROW_TYPES: dict[str, pa.DataType] = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
                                       "string": pa.string()}


def arrow_schema(columns: Sequence[TransferColumn]) -> pa.Schema:
    return pa.schema([pa.field(c.name, ARROW_TYPES[c.kind], nullable=c.nullable) for c in columns])


def record_batch(schema: pa.Schema, columns: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """Columns of Python values (in the schema's order) as one Arrow record batch."""
    return pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)],
                                      schema=schema)


def as_columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Rows (tuples of `width` values) as `width` columns."""
    return [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]


def batch_rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    """The rows of an Arrow record batch as tuples of Python values, in column order."""
    return list(zip(*(col.to_pylist() for col in batch.columns), strict=True)) if batch.num_columns else []
