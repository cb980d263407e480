"""`EventTable`: one columnar table for the events of every trace source.

Every column is a numpy array of the same length; times are int64 nanoseconds; names are ids
into one string table (`names`); shape arguments of CPU ops (`Input Dims`, `Input type`,
`Concrete Inputs`) are ids into a second string table (`args_text`) holding their raw JSON;
so are the args of collectives (`comm_id`: record_param_comms ops, gloo:* annotations).
Analyzers take an `EventTable` and return a pandas DataFrame; they never mutate it.
COLUMNS gives each column's widest dtype; the integer columns of NARROW_COLUMNS are stored in
the smallest signed integer dtype that holds their values (`narrow_columns`: an export's stream
ids fit int8, its ranks int8, its thread ids int32, its durations int32, its name ids int8 when
it has under 128 names), so analyzers must not assume their width: cast to int64 before
arithmetic that could leave that range.
Optional columns a source has for some rows only (Nsight Systems' kernel launch configuration)
live in `extra`, sparse and interned: the rows that have them are `extra_rows` (sorted row
indices), each with a code (`extra_code`) into `extra`, which holds one value per distinct
combination (a few hundred launch configurations for millions of kernels);
`extra_at(name, rows)` reads them (-1 for a row without one). Kineto tables have none.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt


class Kind(IntEnum):
    """What an event is, independent of the trace format's spelling."""

    CPU_OP = 0  # aten::mm, ...
    USER_ANNOTATION = 1  # record_function / ProfilerStep#N / NVTX range on a CPU thread
    RUNTIME = 2  # CUDA / HIP runtime or driver API call (cudaLaunchKernel, hipGraphLaunch, ...)
    KERNEL = 3  # GPU kernel
    MEMCPY = 4  # GPU memory copy
    MEMSET = 5  # GPU memory set
    GPU_ANNOTATION = 6  # a user annotation projected onto a GPU stream by the profiler
    SYNC = 7  # CUDA synchronization record (host waiting, drawn on a GPU row; not GPU work)
    OTHER = 8


GPU_WORK_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
TEXT_ID_COLUMNS = ("dims_id", "types_id", "concrete_id", "comm_id")  # ids into args_text

# Column name -> dtype. Order is the canonical column order.
COLUMNS: dict[str, Any] = {
    "name_id": np.int32,
    "kind": np.int8,
    "ts_ns": np.int64,
    "dur_ns": np.int64,
    "pid": np.int64,
    "tid": np.int64,
    "stream": np.int64,  # -1 for CPU events
    "device": np.int32,  # -1 when unknown
    "correlation": np.int64,  # -1 when absent
    "external_id": np.int64,  # -1 when absent
    "bytes": np.int64,  # memcpy / memset bytes, -1 when absent
    "dims_id": np.int32,  # Input Dims (raw JSON) id into args_text, -1 when absent
    "types_id": np.int32,  # Input type
    "concrete_id": np.int32,  # Concrete Inputs
    "comm_id": np.int32,  # a collective's args (JSON object) id into args_text, -1 when not one
    "rank": np.int32,
}
# stored narrowed to the values they hold; ts_ns stays int64. dur_ns is int32 when every duration
# is under 2**31 ns (2.1 s): a sum of durations must be taken in int64. np.sum, np.cumsum,
# np.add.reduceat and pandas sums promote int32 by themselves; an accumulator made like the
# column (np.zeros_like, astype(column.dtype)) or arithmetic in place on it does not.
NARROW_COLUMNS = ("name_id", "dur_ns", "pid", "tid", "stream", "device", "correlation", "external_id", "bytes", "rank")
_SIGNED = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))


def int_dtype_for(lo: int, hi: int) -> np.dtype[Any]:
    """The smallest signed integer dtype holding every value in [lo, hi] and -1 (the NA)."""
    lo, hi = min(int(lo), -1), max(int(hi), -1)
    return next(dt for dt in _SIGNED if np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max)


def narrowest(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`values` in the smallest signed integer dtype that holds them (the same array when it is)."""
    if len(values) == 0 or values.dtype.kind not in "iu":
        return values
    if values.strides == (0,):  # a broadcast constant: narrow the one value
        dt = int_dtype_for(values[0], values[0])
        return values if dt.itemsize >= values.dtype.itemsize else np.broadcast_to(values[:1].astype(dt), values.shape)
    dt = int_dtype_for(values.min(), values.max())
    return values.astype(dt) if dt.itemsize < values.dtype.itemsize else values


def narrow_columns(columns: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
    """The NARROW_COLUMNS of `columns` narrowed (one column at a time, so memory peaks at one copy)."""
    for k in NARROW_COLUMNS:
        if k in columns:
            columns[k] = narrowest(columns[k])
    return columns


@dataclass(frozen=True)
class TraceMeta:
    """What a trace file says about itself (one per loaded file)."""

    path: str
    rank: int
    world_size: int | None = None
    backend: str | None = None
    devices: tuple[str, ...] = ()
    base_time_ns: int | None = None
    events_read: int = 0  # events in traceEvents, every phase
    events_kept: int = 0  # rows this file contributed to the table
    rank_in_file: int | None = None  # distributedInfo.rank, None when the file names none
    rank_said: str = ""  # what distributedInfo.rank says when it is not a plain rank (absent, text, a list)
    source: str = "kineto"  # the trace format: "kineto" or "nsys"
    # events left out while reading, by reason ("no ts", "negative dur", ...) -> count
    dropped: tuple[tuple[str, int], ...] = ()
    # field values read leniently, by what was done ("args.bytes: string read as integer") -> count
    coerced: tuple[tuple[str, int], ...] = ()
    # located one-line warnings about this file (capped; counts are in `dropped` / `coerced`)
    warnings: tuple[str, ...] = ()
    # event categories (Kineto `cat`) perfkit does not read -> events with that category
    unknown_categories: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, eq=False)
class EventTable:
    """Columns of equal length; see COLUMNS for names and dtypes."""

    columns: dict[str, npt.NDArray[Any]]
    names: tuple[str, ...]
    args_text: tuple[str, ...] = ()
    meta: tuple[TraceMeta, ...] = field(default_factory=tuple)
    # optional sparse columns (e.g. "grid_x", "registers" of an nsys export's kernel rows):
    # row extra_rows[i] has the values extra[name][extra_code[i]] (extra_code None: code i)
    extra: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    extra_rows: npt.NDArray[Any] = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    extra_code: npt.NDArray[Any] | None = None

    def __post_init__(self) -> None:
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"EventTable columns differ in length: {sorted(lengths)}")
        n_values = self.n_extra_values
        if self.extra_code is not None:
            if len(self.extra_code) != len(self.extra_rows):
                raise ValueError("EventTable extra_code differs in length from extra_rows")
            if len(self.extra_code) and not 0 <= int(self.extra_code.min()) <= int(self.extra_code.max()) < n_values:
                raise ValueError("EventTable extra_code points outside the extra values")
        if any(len(v) != n_values for v in self.extra.values()):
            raise ValueError("EventTable extra columns differ in length (from extra_rows, or from each other)")
        missing = set(COLUMNS) - set(self.columns)
        if missing:
            raise ValueError(f"EventTable lacks columns {sorted(missing)}")
        odd = [k for k, v in self.columns.items() if v.dtype.kind != "i"]
        if odd:
            raise ValueError(f"EventTable columns {odd} are not signed integers")

    @property
    def n_extra_values(self) -> int:
        """How many values each extra column holds (distinct combinations; one per extra row
        when not interned)."""
        if self.extra_code is None:
            return len(self.extra_rows)
        return len(next(iter(self.extra.values()))) if self.extra else 0

    def __len__(self) -> int:
        return len(self.columns["ts_ns"])

    def __getitem__(self, column: str) -> npt.NDArray[Any]:
        return self.columns[column]

    @property
    def end_ns(self) -> npt.NDArray[np.int64]:
        return self.columns["ts_ns"] + self.columns["dur_ns"]

    @cached_property
    def ranks(self) -> list[int]:
        return [int(r) for r in np.unique(self.columns["rank"])]

    def name_of(self, ids: npt.NDArray[Any]) -> npt.NDArray[np.object_]:
        """Names for an array of name ids (vectorized lookup in the string table)."""
        table = np.asarray(self.names, dtype=object)
        return table[np.asarray(ids, dtype=np.int64)] if len(table) else np.empty(0, dtype=object)

    def mask_kind(self, *kinds: Kind) -> npt.NDArray[np.bool_]:
        return member(self.columns["kind"], [int(k) for k in kinds])

    def gpu_mask(self) -> npt.NDArray[np.bool_]:
        """GPU work: kernels, memcpy and memset (not sync records, not annotations)."""
        return self.mask_kind(*GPU_WORK_KINDS)

    def with_rank(self, rank: int) -> EventTable:
        """The same events labelled as `rank` (for files that do not name their rank)."""
        cols = dict(self.columns)
        cols["rank"] = np.full(len(self), rank, dtype=int_dtype_for(rank, rank))
        meta = tuple(replace(m, rank=rank) for m in self.meta)
        return EventTable(cols, self.names, self.args_text, meta, self.extra, self.extra_rows, self.extra_code)

    def take(self, index: npt.NDArray[Any]) -> EventTable:
        """Rows at `index` (an integer index array or a boolean mask); tables are shared."""
        cols = {k: v[index] for k, v in self.columns.items()}
        if not self.extra:
            return EventTable(cols, self.names, self.args_text, self.meta)
        idx = np.asarray(index)
        idx = np.flatnonzero(idx) if idx.dtype == bool else idx.astype(np.int64, copy=False)
        code = self.extra_codes_at(idx)
        new_rows = np.flatnonzero(code >= 0)  # positions in the new table: sorted
        return EventTable(cols, self.names, self.args_text, self.meta, self.extra,
                          new_rows.astype(int_dtype_for(0, len(idx))), code[new_rows])

    def extra_codes_at(self, rows: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """Code into the `extra` values of each of `rows` (-1 for a row without extra values)."""
        rows = np.asarray(rows)
        if len(self.extra_rows) == 0 or len(rows) == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        narrow = self.extra_rows.dtype
        if rows.dtype.itemsize > narrow.itemsize and len(self) <= np.iinfo(narrow).max:
            rows = rows.astype(narrow)  # every row number of the table fits: no int64 copy of extra_rows
        pos = np.searchsorted(self.extra_rows, rows)
        np.minimum(pos, len(self.extra_rows) - 1, out=pos)
        found = self.extra_rows[pos] == rows
        code = pos if self.extra_code is None else self.extra_code[pos].astype(np.int64)
        code[~found] = -1
        return code

    def extra_at(self, name: str, rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Values of extra column `name` at `rows` (-1 where a row has none)."""
        return self.extras_at((name,), rows)[name]

    def extras_at(self, names: tuple[str, ...], rows: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        """Values of several extra columns at `rows` (-1 where a row has none), rows located once."""
        code = self.extra_codes_at(rows)
        has = code >= 0
        np.maximum(code, 0, out=code)
        out = {}
        for name in names:
            values = self.extra[name]
            picked = values[code] if len(values) else np.full(len(code), -1, dtype=values.dtype)
            picked[~has] = -1
            out[name] = picked
        return out

    def name_ids_matching(self, predicate: Any) -> npt.NDArray[np.int32]:
        """Ids of the names for which `predicate(name)` is true (runs once per unique name)."""
        return np.asarray([i for i, n in enumerate(self.names) if predicate(n)], dtype=np.int32)


_BLOCK = 1 << 20  # rows per block of `member`'s lookup


def member(values: npt.NDArray[Any], ids: Any) -> npt.NDArray[np.bool_]:
    """`np.isin(values, ids)` for a table-length integer column without its temporaries
    (np.isin copies a column to int64 and sorts: ~13 bytes per row, where this needs 1)."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    out = np.zeros(len(values), dtype=bool)
    if len(ids) == 0 or len(values) == 0:
        return out
    if len(ids) <= 4:
        for i in ids.tolist():
            out |= values == i
        return out
    lo, hi = int(ids[0]), int(ids[-1])
    if hi - lo > 1 << 24:  # sparse, wide ids: sort-based, one block at a time
        for a in range(0, len(values), _BLOCK):
            out[a : a + _BLOCK] = np.isin(values[a : a + _BLOCK], ids)
        return out
    lut = np.zeros(hi - lo + 1, dtype=bool)
    lut[ids - lo] = True
    for a in range(0, len(values), _BLOCK):
        v = values[a : a + _BLOCK].astype(np.int64) - lo
        inside = (v >= 0) & (v <= hi - lo)
        out[a : a + _BLOCK] = inside & lut[np.where(inside, v, 0)]
    return out


def empty_columns(n: int = 0) -> dict[str, npt.NDArray[Any]]:
    return {k: np.full(n, -1, dtype=dt) for k, dt in COLUMNS.items()}


def concat_tables(tables: list[EventTable]) -> EventTable:
    """One table from several (e.g. one per rank): names and args are re-interned."""
    if not tables:
        return EventTable(empty_columns(), ())
    names: dict[str, int] = {}
    texts: dict[str, int] = {}
    parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in COLUMNS}
    for t in tables:
        name_map = np.asarray([names.setdefault(n, len(names)) for n in t.names], dtype=np.int32)
        text_map = np.asarray([texts.setdefault(s, len(texts)) for s in t.args_text], dtype=np.int32)
        for k in COLUMNS:
            col = t.columns[k]
            if k == "name_id" and len(col):
                col = name_map[col]
            elif k in TEXT_ID_COLUMNS and len(col):
                col = np.where(col >= 0, text_map[np.maximum(col, 0)] if len(text_map) else -1, -1)
            parts[k].append(col)
    cols = narrow_columns({k: np.concatenate(v) for k, v in parts.items()})
    meta = tuple(m for t in tables for m in t.meta)
    extra, rows, codes = _concat_extra(tables)
    return EventTable(cols, tuple(names), tuple(texts), meta, extra, rows.astype(int_dtype_for(0, len(cols["ts_ns"]))),
                      codes.astype(int_dtype_for(0, max(len(v) for v in extra.values()) if extra else 0)))


def _concat_extra(tables: list[EventTable]) -> tuple[dict[str, npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Sparse optional columns of several tables: (values, rows shifted, codes shifted);
    -1 values for a column a table lacks."""
    dtypes: dict[str, Any] = {}
    for t in tables:
        for k, v in t.extra.items():
            dtypes.setdefault(k, v.dtype)
    offsets = np.cumsum([0] + [len(t) for t in tables[:-1]])
    rows = np.concatenate([t.extra_rows.astype(np.int64) + off for t, off in zip(tables, offsets, strict=True)])
    n_values = [t.n_extra_values for t in tables]
    starts = np.cumsum([0, *n_values[:-1]])
    codes = np.concatenate([
        (np.arange(len(t.extra_rows)) if t.extra_code is None else t.extra_code.astype(np.int64)) + s
        for t, s in zip(tables, starts, strict=True)
    ]).astype(np.int64)
    extra = {
        k: np.concatenate([t.extra[k].astype(dt, copy=False) if k in t.extra else np.full(n, -1, dtype=dt)
                           for t, n in zip(tables, n_values, strict=True)])
        for k, dt in dtypes.items()
    }
    return extra, rows, codes

