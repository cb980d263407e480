"""GPU work and CUDA API calls of an nsys export, read column by column.

Tables (columns perfkit reads; optional ones default to -1 when an export lacks them):
- CUPTI_ACTIVITY_KIND_KERNEL: start, end, deviceId, streamId, correlationId, globalPid*,
  demangledName (else shortName), graphId*, graphNodeId*, gridX/Y/Z*, blockX/Y/Z*,
  registersPerThread*, staticSharedMemory*, dynamicSharedMemory*.
- CUPTI_ACTIVITY_KIND_MEMCPY (optional table): start, end, deviceId, streamId, correlationId,
  globalPid*, bytes, copyKind*, srcKind*, dstKind*; named as Kineto names copies
  ("Memcpy HtoD (Pinned -> Device)").
- CUPTI_ACTIVITY_KIND_MEMSET (optional table): ... bytes, memKind* ("Memset (Device)").
- CUPTI_ACTIVITY_KIND_RUNTIME (optional table): start, end, globalTid, correlationId, nameId
  (names without nsys's `_vNNNN` suffix: cudaLaunchKernel_v7000 -> cudaLaunchKernel).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.event_table import Kind, int_dtype_for
from perfkit.analyzers.loaders.nsys.names import Names, api_name
from perfkit.analyzers.loaders.nsys.schema import Export
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


# columns each GPU table fills in the event table (`into` views) besides its own derived ones
DIRECT = ("ts_ns", "dur_ns", "device", "stream", "correlation")


def _base(export: Export, table: str) -> dict[str, tuple[str, Any]]:
    export.require(table, GPU_REQUIRED)
    return {
        "ts_ns": ('"start"', np.int64),
        "dur_ns": ('"end" - "start"', np.int64),
        "device": ('"deviceId"', np.int32),
        "stream": ('"streamId"', np.int64),
        "correlation": (export.expr(table, "correlationId", -1), np.int64),
        "process": (export.expr(table, "globalPid", -1), None),  # interned while read (`Interner`)
    }


def gpu_bounds(export: Export, table: str) -> dict[str, tuple[int, int] | None]:
    """(min, max) of the stream, device, correlation, duration (and bytes) columns of a GPU table."""
    export.require(table, GPU_REQUIRED)
    cols = {"stream": '"streamId"', "device": '"deviceId"', "correlation": export.expr(table, "correlationId", -1),
            "dur_ns": '"end" - "start"'}
    if table != KERNEL:
        cols["bytes"] = export.expr(table, "bytes", -1)
    return dict(zip(cols, export.bounds(table, list(cols.values())), strict=True))


def read_kernels(export: Export, names: Names, into: Columns) -> dict[str, Any]:
    """Kernels: DIRECT columns and name_id written into `into`; returns `process` and `config`
    interned (`Interner.result()`: the distinct values and each row's code; `config` holds
    KERNEL_CONFIG, a few hundred distinct launch configurations for millions of kernels)."""
    present = [c for c in ("demangledName", "shortName") if export.has(KERNEL, c)]
    if not present:
        export.require(KERNEL, ("demangledName",))
    cols = _base(export, KERNEL)
    cols["name_sid"] = (f'COALESCE({", ".join(chr(34) + c + chr(34) for c in present)}, -1)', None)
    exprs = {extra: export.expr(KERNEL, column, -1) for extra, (column, _) in KERNEL_CONFIG.items()}
    found = export.bounds(KERNEL, list(exprs.values()))  # each value kept in the narrowest dtype
    n = len(into["ts_ns"])
    config = Interner({k: int_dtype_for(*(b or (-1, -1))) for k, b in zip(exprs, found, strict=True)}, n)
    for extra, expr in exprs.items():
        cols[extra] = (expr, None)
    process = Interner({"process": np.int64}, n)
    name_id = _Filler(into["name_id"])

    def feed(chunk: npt.NDArray[Any]) -> None:
        name_id.add(names.from_string_ids(chunk["name_sid"]))
        process.add([chunk["process"]])
        config.add([chunk[k] for k in KERNEL_CONFIG])

    export.read(KERNEL, cols, out={k: into[k] for k in DIRECT}, feed=feed)
    into["kind"][:] = int(Kind.KERNEL)
    return {"process": process.result(), "config": config.result()}


class _Filler:
    """Writes consecutive parts into an array."""

    def __init__(self, out: npt.NDArray[Any]) -> None:
        self.out, self.pos = out, 0

    def add(self, values: npt.NDArray[Any]) -> None:
        self.out[self.pos : self.pos + len(values)] = values
        self.pos += len(values)


def _read_named(export: Export, table: str, cols: dict[str, tuple[str, Any]], code_cols: dict[str, str],
                into: Columns, names: Names, fmt: Callable[[tuple[int, ...]], str]) -> dict[str, Any]:
    """A copy / set table: DIRECT and bytes into `into`, name_id from the interned `code_cols`
    (named by `fmt` once per distinct combination); returns `process` interned."""
    n = len(into["ts_ns"])
    for c, column in code_cols.items():
        cols[c] = (export.expr(table, column, -1), None)
    kinds = Interner(dict.fromkeys(code_cols, np.int64), n)
    process = Interner({"process": np.int64}, n)

    def feed(chunk: npt.NDArray[Any]) -> None:
        kinds.add([chunk[c] for c in code_cols])
        process.add([chunk["process"]])

    export.read(table, cols, out={k: into[k] for k in (*DIRECT, "bytes")}, feed=feed)
    distinct, code = kinds.result()
    rows = [tuple(r) for r in np.stack(list(distinct.values()), axis=1).tolist()] if distinct else []
    ids = {r: names.intern(fmt(r)) for r in sorted(set(rows))}  # names numbered in the codes' order
    lut = np.asarray([ids[r] for r in rows], dtype=np.int32)
    into["name_id"][:] = per_row(lut, code)
    return {"process": process.result()}


def read_memcpy(export: Export, names: Names, into: Columns) -> dict[str, Any]:
    """Copies: DIRECT columns, bytes and name_id written into `into`; returns `process` interned."""
    cols = _base(export, MEMCPY)
    cols["bytes"] = (export.expr(MEMCPY, "bytes", -1), np.int64)

    def name(code: tuple[int, ...]) -> str:
        kind = COPY_KINDS.get(code[0], f"kind {code[0]}")
        if code[1] < 0 or code[2] < 0:
            return f"Memcpy {kind}"
        return f"Memcpy {kind} ({MEM_KINDS.get(code[1], code[1])} -> {MEM_KINDS.get(code[2], code[2])})"

    out = _read_named(export, MEMCPY, cols, {"copy": "copyKind", "src": "srcKind", "dst": "dstKind"}, into, names, name)
    into["kind"][:] = int(Kind.MEMCPY)
    return out


def read_memset(export: Export, names: Names, into: Columns) -> dict[str, Any]:
    """Memsets: DIRECT columns, bytes and name_id written into `into`; returns `process` interned."""
    cols = _base(export, MEMSET)
    cols["bytes"] = (export.expr(MEMSET, "bytes", -1), np.int64)
    out = _read_named(export, MEMSET, cols, {"mem": "memKind"}, into, names,
                      lambda c: "Memset" if c[0] < 0 else f"Memset ({MEM_KINDS.get(c[0], c[0])})")
    into["kind"][:] = int(Kind.MEMSET)
    return out


RUNTIME_COLUMNS = {
    "ts_ns": ('"start"', np.int64),
    "dur_ns": ('"end" - "start"', np.int64),
    "global_tid": ('COALESCE("globalTid", -1)', np.int64),
    "correlation": ('COALESCE("correlationId", -1)', np.int64),
    "name_sid": ('COALESCE("nameId", -1)', np.int64),
}


def runtime_chunks(export: Export, names: Names) -> Iterator[Columns]:
    """CUDA runtime / driver API calls, CHUNK_ROWS at a time (none without a RUNTIME table):
    ts_ns, dur_ns, global_tid, correlation, name_id."""
    if RUNTIME not in export.tables:
        return
    export.require(RUNTIME, ("start", "end", "globalTid", "correlationId", "nameId"))
    for chunk in export.chunks(RUNTIME, RUNTIME_COLUMNS):
        out = {k: chunk[k] for k in RUNTIME_COLUMNS if k != "name_sid"}
        out["name_id"] = names.from_string_ids(chunk["name_sid"], api_name)
        yield out
