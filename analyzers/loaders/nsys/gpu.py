"""GPU work and CUDA API calls of an nsys export, read column by column.

Tables (columns perfkit reads; optional ones default to -1 when an export lacks them):
- CUPTI_ACTIVITY_KIND_KERNEL: start, end, deviceId, streamId, correlationId, globalPid*,
  demangledName (else shortName, else mangledName; none usable: named by launch
  configuration, `Unnamed`), graphId*, graphNodeId*, gridX/Y/Z*, blockX/Y/Z*,
  registersPerThread*, staticSharedMemory*, dynamicSharedMemory*.
- CUPTI_ACTIVITY_KIND_MEMCPY (optional table): start, end, deviceId, streamId, correlationId,
  globalPid*, bytes, copyKind*, srcKind*, dstKind*; named as Kineto names copies
  ("Memcpy HtoD (Pinned -> Device)").
- CUPTI_ACTIVITY_KIND_MEMSET (optional table): ... bytes, memKind* ("Memset (Device)").
- CUPTI_ACTIVITY_KIND_RUNTIME (optional table): start, end, globalTid, correlationId, nameId
  (names without nsys's `_vNNNN` suffix: cudaLaunchKernel_v7000 -> cudaLaunchKernel).

Every table is checked before it is read (`gpu_check`, `runtime_check`; rules in
analyzers.loaders.nsys.checks): rows with unusable times, device, stream or thread are left out
and counted, unusable describing values are read as absent and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.event_table import Kind, int_dtype_for
from perfkit.analyzers.loaders.nsys.checks import (
    DUR,
    INT32_MAX,
    INT64_MAX,
    UINT32_MAX,
    Bound,
    Clean,
    FirstOf,
    TableCheck,
    integer_rules,
    time_rules,
)
from perfkit.analyzers.loaders.nsys.names import Names, api_name
from perfkit.analyzers.loaders.nsys.schema import Export
from perfkit.analyzers.loaders.nsys.trusted import Item, structured
from perfkit.analyzers.row_codes import Interner, per_row

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GPU_REQUIRED = ("start", "end", "deviceId", "streamId", "correlationId")

# launch configuration kept per kernel: extra column -> (nsys column, dtype)
KERNEL_CONFIG: dict[str, tuple[str, Any]] = {
    "grid_x": ("gridX", np.int32),
    "grid_y": ("gridY", np.int32),
    "grid_z": ("gridZ", np.int32),
    "block_x": ("blockX", np.int32),
    "block_y": ("blockY", np.int32),
    "block_z": ("blockZ", np.int32),
    "registers": ("registersPerThread", np.int32),
    "static_smem_bytes": ("staticSharedMemory", np.int32),
    "dynamic_smem_bytes": ("dynamicSharedMemory", np.int32),
    "graph_id": ("graphId", np.int64),
    "graph_node_id": ("graphNodeId", np.int64),
}
# CUDA_MEMCPY_KIND / CUDA_MEMOPR_MEMORY_KIND codes (the export's ENUM_CUDA_MEMCPY_OPER /
# ENUM_CUDA_MEM_KIND tables) in Kineto's spelling
COPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}  # fmt: skip
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
             6: "Managed Static", 7: "Unknown"}  # fmt: skip

Columns = dict[str, npt.NDArray[Any]]
Sinks = dict[str, Any]  # column -> where a reader writes its rows (`len`, `[a:b] = values`)

# columns each GPU table fills in the event table (`into` views) besides its own derived ones
DIRECT = ("ts_ns", "dur_ns", "device", "stream", "correlation")
NAME_COLUMNS = ("demangledName", "shortName", "mangledName")  # a kernel's name: the first usable one
_CORRELATION = Clean("correlationId", 0, UINT32_MAX)
_PROCESS = Clean("globalPid", 0, INT64_MAX)
_BYTES = Clean("bytes", 0, INT64_MAX)
_KIND_COLUMNS = {MEMCPY: ("copyKind", "srcKind", "dstKind"), MEMSET: ("memKind",)}
_NAMES = FirstOf(tuple(Clean(c, 0, INT64_MAX) for c in NAME_COLUMNS))


def _config_cleans() -> list[Clean]:
    return [Clean(column, 0, int(np.iinfo(dt).max)) for column, dt in KERNEL_CONFIG.values()]


def gpu_check(export: Export, table: str) -> TableCheck:
    """The rows of a GPU table perfkit reads (checked once per export): times, a device and a
    stream that are usable; correlationId, globalPid, bytes, kinds, launch configuration and
    name ids read as absent where unusable. Its `found` bounds size the table's columns."""
    found = export.memo.get(("check", table))
    if found is None:
        export.require(table, GPU_REQUIRED)
        rules = time_rules() + integer_rules("deviceId", 0, INT32_MAX) + integer_rules("streamId", 0, UINT32_MAX)
        cleans = [_CORRELATION, _PROCESS]
        bounds: dict[str, Bound] = {"stream": '"streamId"', "device": '"deviceId"', "correlation": _CORRELATION,
                                    "dur_ns": '"end" - "start"'}
        if table == KERNEL:
            config = _config_cleans()
            cleans += config + [Clean(c, 0, INT64_MAX) for c in NAME_COLUMNS]
            bounds.update(zip(KERNEL_CONFIG, config, strict=True))
        else:
            cleans += [_BYTES] + [Clean(c, 0, INT32_MAX) for c in _KIND_COLUMNS[table]]
            bounds["bytes"] = _BYTES
        found = export.memo[("check", table)] = TableCheck(export, table, rules, cleans, bounds=bounds).start()
    assert isinstance(found, TableCheck)
    return found


Items = dict[str, tuple[Item, Any]]  # name -> (what is read, dtype: None when only fed)


def _base() -> Items:
    return {
        "ts_ns": ('"start"', np.int64),
        "dur_ns": (DUR, np.int64),
        "device": ('"deviceId"', np.int32),
        "stream": ('"streamId"', np.int64),
        "correlation": (_CORRELATION, np.int64),
        "process": (_PROCESS, None),  # interned while read (`Interner`)
    }


def _read(export: Export, table: str, check: TableCheck, cols: Items, out: Sinks,
          feed: Callable[[npt.NDArray[Any]], None]) -> None:
    """`cols` of the checked rows of `table` into `out` and `feed`, read the checked or the fast way."""
    source = structured(check, cols) if check.trusted else None
    export.read(table, sql_items(check, cols), where=check.where, out=out, feed=feed, chunks=source)


def sql_items(check: TableCheck, cols: Items) -> dict[str, tuple[str, Any]]:
    return {k: (check.sql(item), dt) for k, (item, dt) in cols.items()}


_UNNAMED_BY = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers", "static_smem_bytes")


class Unnamed:
    """Kernels without a usable name id, named by their launch configuration (one name per
    distinct configuration: `<unnamed kernel: grid 128x1x1, block 256x1x1, 32 registers,
    0 B static shared>`), so unnamed kernels are never merged into one row."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.n = 0
        self.distinct: set[int] = set()

    def name_ids(self, rows: npt.NDArray[Any]) -> npt.NDArray[np.int32]:
        self.n += len(rows)
        config = np.stack([rows[k] for k in _UNNAMED_BY], axis=1)
        uniq, inverse = np.unique(config, axis=0, return_inverse=True)
        lut = np.asarray([self.names.intern(_unnamed(tuple(u))) for u in uniq.tolist()], dtype=np.int32)
        self.distinct.update(lut.tolist())
        return lut[inverse.ravel()]


def _unnamed(c: tuple[int, ...]) -> str:
    def part(values: tuple[int, ...]) -> str:
        return "x".join("?" if v < 0 else str(v) for v in values)

    if all(v < 0 for v in c):
        return "<unnamed kernel>"
    regs = "?" if c[6] < 0 else str(c[6])
    smem = "?" if c[7] < 0 else str(c[7])
    return f"<unnamed kernel: grid {part(c[0:3])}, block {part(c[3:6])}, {regs} registers, {smem} B static shared>"


def read_kernels(export: Export, names: Names, into: Sinks) -> dict[str, Any]:
    """Kernels: DIRECT columns and name_id written into `into`; returns `process` and `config`
    interned (`Interner.result()`: the distinct values and each row's code; `config` holds
    KERNEL_CONFIG, a few hundred distinct launch configurations for millions of kernels) and
    `unnamed` (the kernels named by their launch configuration)."""
    check = gpu_check(export, KERNEL)
    cols = _base()
    cols["name_sid"] = (_NAMES, None)
    config_cleans = dict(zip(KERNEL_CONFIG, _config_cleans(), strict=True))
    n = len(into["ts_ns"])
    # narrowest: from the checks' bounds when they scanned the table, else from the values fed
    config = Interner({k: int_dtype_for(*(check.found[k] or (-1, -1))) if k in check.found else np.dtype(np.int64)
                       for k in KERNEL_CONFIG}, n)
    seen = dict.fromkeys(KERNEL_CONFIG, (-1, -1))
    for extra, clean in config_cleans.items():
        cols[extra] = (clean, None)
    process = Interner({"process": np.int64}, n)
    name_id = _Filler(into["name_id"])
    unnamed = Unnamed(names)

    def feed(chunk: npt.NDArray[Any]) -> None:
        sid = chunk["name_sid"]
        ids = names.from_string_ids(sid, missing=None)
        none = np.flatnonzero(sid < 0)
        if len(none):
            ids[none] = unnamed.name_ids(chunk[none])
        name_id.add(ids)
        process.add([chunk["process"]])
        config.add([chunk[k] for k in KERNEL_CONFIG])
        for k, (lo, hi) in seen.items():
            seen[k] = min(lo, int(chunk[k].min())), max(hi, int(chunk[k].max()))

    _read(export, KERNEL, check, cols, {k: into[k] for k in DIRECT}, feed)
    into["kind"][:] = int(Kind.KERNEL)
    values, code = config.result()
    values = {k: v.astype(int_dtype_for(*seen[k]), copy=False) for k, v in values.items()}
    return {"process": process.result(), "config": (values, code), "unnamed": unnamed}


class _Filler:
    """Writes consecutive parts into an array."""

    def __init__(self, out: Any) -> None:
        self.out, self.pos = out, 0

    def add(self, values: npt.NDArray[Any]) -> None:
        self.out[self.pos : self.pos + len(values)] = values
        self.pos += len(values)


def _read_named(export: Export, table: str, cols: Items, into: Sinks, names: Names,
                fmt: Callable[[tuple[int, ...]], str]) -> dict[str, Any]:
    """A copy / set table: DIRECT and bytes into `into`, name_id from the interned kind columns
    (named by `fmt` once per distinct combination); returns `process` interned."""
    n = len(into["ts_ns"])
    kind_cols = _KIND_COLUMNS[table]
    check = gpu_check(export, table)
    for column in kind_cols:
        cols[column] = (Clean(column, 0, INT32_MAX), None)
    kinds = Interner(dict.fromkeys(kind_cols, np.int64), n)
    process = Interner({"process": np.int64}, n)

    def feed(chunk: npt.NDArray[Any]) -> None:
        kinds.add([chunk[c] for c in kind_cols])
        process.add([chunk["process"]])

    _read(export, table, check, cols, {k: into[k] for k in (*DIRECT, "bytes")}, feed)
    distinct, code = kinds.result()
    rows = [tuple(r) for r in np.stack(list(distinct.values()), axis=1).tolist()] if distinct else []
    ids = {r: names.intern(fmt(r)) for r in sorted(set(rows))}  # names numbered in the codes' order
    lut = np.asarray([ids[r] for r in rows], dtype=np.int32)
    into["name_id"][:] = per_row(lut, code)
    return {"process": process.result()}


def read_memcpy(export: Export, names: Names, into: Sinks) -> dict[str, Any]:
    """Copies: DIRECT columns, bytes and name_id written into `into`; returns `process` interned."""
    cols = _base()
    cols["bytes"] = (_BYTES, np.int64)

    def name(code: tuple[int, ...]) -> str:
        kind = COPY_KINDS.get(code[0], f"kind {code[0]}")
        if code[1] < 0 or code[2] < 0:
            return f"Memcpy {kind}"
        return f"Memcpy {kind} ({MEM_KINDS.get(code[1], code[1])} -> {MEM_KINDS.get(code[2], code[2])})"

    out = _read_named(export, MEMCPY, cols, into, names, name)
    into["kind"][:] = int(Kind.MEMCPY)
    return out


def read_memset(export: Export, names: Names, into: Sinks) -> dict[str, Any]:
    """Memsets: DIRECT columns, bytes and name_id written into `into`; returns `process` interned."""
    cols = _base()
    cols["bytes"] = (_BYTES, np.int64)
    out = _read_named(export, MEMSET, cols, into, names,
                      lambda c: "Memset" if c[0] < 0 else f"Memset ({MEM_KINDS.get(c[0], c[0])})")
    into["kind"][:] = int(Kind.MEMSET)
    return out


RUNTIME_REQUIRED = ("start", "end", "globalTid", "correlationId", "nameId")
_NAME_ID = Clean("nameId", 0, INT64_MAX, count_null=True)
UNNAMED_CALL = "<unnamed API call>"


def runtime_check(export: Export) -> TableCheck:
    """The CUDA API calls perfkit reads (checked once per export): usable times and thread;
    correlationId and nameId read as absent where unusable."""
    found = export.memo.get(("check", RUNTIME))
    if found is None:
        export.require(RUNTIME, RUNTIME_REQUIRED)
        rules = time_rules() + integer_rules("globalTid", 0, INT64_MAX)
        bounds: dict[str, Bound] = {"correlation": _CORRELATION, "dur_ns": '"end" - "start"'}
        found = export.memo[("check", RUNTIME)] = TableCheck(export, RUNTIME, rules, [_CORRELATION, _NAME_ID],
                                                             bounds=bounds).start()
    assert isinstance(found, TableCheck)
    return found


RUNTIME_COLUMNS: Items = {
    "ts_ns": ('"start"', np.int64),
    "dur_ns": (DUR, np.int64),
    "global_tid": ('"globalTid"', np.int64),
    "correlation": (_CORRELATION, np.int64),
    "name_sid": (_NAME_ID, np.int64),
}


def runtime_chunks(export: Export, names: Names) -> Iterator[Columns]:
    """CUDA runtime / driver API calls, CHUNK_ROWS at a time (none without a RUNTIME table):
    ts_ns, dur_ns, global_tid, correlation, name_id (UNNAMED_CALL without a usable nameId)."""
    if RUNTIME not in export.tables:
        return
    check = runtime_check(export)
    cols = RUNTIME_COLUMNS
    source = structured(check, cols) if check.trusted else export.chunks(RUNTIME, sql_items(check, cols), check.where)
    for chunk in source:
        out = {k: chunk[k] for k in cols if k != "name_sid"}
        out["name_id"] = names.from_string_ids(chunk["name_sid"], api_name, missing=UNNAMED_CALL)
        yield out
