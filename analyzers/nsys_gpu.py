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

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from analyzers.event_table import Kind, int_dtype_for
from analyzers.nsys_names import Names, api_name
from analyzers.nsys_schema import Export
from analyzers.row_codes import Interner

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
        "process": (export.expr(table, "globalPid", -1), np.int64),
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
    """Kernels: DIRECT columns written into `into`; returns process, name_id, and the launch
    configuration interned (`config`: one value per distinct configuration of KERNEL_CONFIG;
    `config_code`: each kernel's code into them, None when every kernel keeps its own)."""
    present = [c for c in ("demangledName", "shortName") if export.has(KERNEL, c)]
    if not present:
        export.require(KERNEL, ("demangledName",))
    cols = _base(export, KERNEL)
    cols["name_sid"] = (f'COALESCE({", ".join(chr(34) + c + chr(34) for c in present)}, -1)', np.int64)
    exprs = {extra: export.expr(KERNEL, column, -1) for extra, (column, _) in KERNEL_CONFIG.items()}
    found = export.bounds(KERNEL, list(exprs.values()))  # each value kept in the narrowest dtype
    config = Interner({k: int_dtype_for(*(b or (-1, -1))) for k, b in zip(exprs, found, strict=True)},
                      export.count(KERNEL))
    for extra, expr in exprs.items():
        cols[extra] = (expr, None)  # fed to the interner chunk by chunk, not stored
    out = export.read(KERNEL, cols, out={k: into[k] for k in DIRECT},
                      feed=lambda chunk: config.add([chunk[k] for k in KERNEL_CONFIG]))
    into["kind"][:] = int(Kind.KERNEL)
    mine = {k: v for k, v in out.items() if k not in DIRECT}
    mine["name_id"] = names.from_string_ids(mine.pop("name_sid"))
    return {**mine, **dict(zip(("config", "config_code"), config.result(), strict=True))}


def _named(names: Names, codes: npt.NDArray[Any], fmt: Any) -> npt.NDArray[np.int32]:
    """Name ids for rows described by small integer code tuples (`fmt(code) -> name`)."""
    if len(codes) == 0:
        return np.empty(0, dtype=np.int32)
    uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
    lut = np.asarray([names.intern(fmt(tuple(int(v) for v in u))) for u in uniq], dtype=np.int32)
    return lut[np.asarray(inverse).reshape(-1)]


def read_memcpy(export: Export, names: Names, into: Columns) -> dict[str, Any]:
    """Copies: DIRECT columns and bytes written into `into`; returns process and name_id."""
    cols = _base(export, MEMCPY)
    cols["bytes"] = (export.expr(MEMCPY, "bytes", -1), np.int64)
    for c in ("copyKind", "srcKind", "dstKind"):
        cols[c] = (export.expr(MEMCPY, c, -1), np.int64)
    out = export.read(MEMCPY, cols, out={k: into[k] for k in (*DIRECT, "bytes")})
    into["kind"][:] = int(Kind.MEMCPY)
    codes = np.stack([out.pop("copyKind"), out.pop("srcKind"), out.pop("dstKind")], axis=1)

    def name(code: tuple[int, ...]) -> str:
        kind = COPY_KINDS.get(code[0], f"kind {code[0]}")
        if code[1] < 0 or code[2] < 0:
            return f"Memcpy {kind}"
        return f"Memcpy {kind} ({MEM_KINDS.get(code[1], code[1])} -> {MEM_KINDS.get(code[2], code[2])})"

    return {"process": out["process"], "name_id": _named(names, codes, name)}


def read_memset(export: Export, names: Names, into: Columns) -> dict[str, Any]:
    """Memsets: DIRECT columns and bytes written into `into`; returns process and name_id."""
    cols = _base(export, MEMSET)
    cols["bytes"] = (export.expr(MEMSET, "bytes", -1), np.int64)
    cols["memKind"] = (export.expr(MEMSET, "memKind", -1), np.int64)
    out = export.read(MEMSET, cols, out={k: into[k] for k in (*DIRECT, "bytes")})
    into["kind"][:] = int(Kind.MEMSET)
    codes = out["memKind"].reshape(-1, 1)
    return {"process": out["process"],
            "name_id": _named(names, codes, lambda c: "Memset" if c[0] < 0 else f"Memset ({MEM_KINDS.get(c[0], c[0])})")}


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
