"""Nsight Systems SQLite exports (`nsys export --type sqlite`) -> `EventTable`.

    from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
    table = load_nsys("report.sqlite")

One export holds every GPU of its host. Ranks are GPUs: a GPU op's `rank` is its `deviceId`
(plus `rank_offset` when several exports are loaded together) and `device` is the deviceId,
so per-rank tables (temporal, idle, launch, overlap, skew) are per GPU. CPU rows take the rank
of the GPU they drive: a CUDA API call the rank of the op it enqueued (same process and
correlationId), else the GPU its process used most; an NVTX range one row per GPU its process
used (a process driving two GPUs projects its ranges onto both; a warning says so). CPU rows
of processes that put no work on a GPU are left out (counted in `meta.dropped`).
`pid` / `tid` are the OS ids from `globalTid` (pid = bits 24-47, tid = bits 0-23) so range
projection matches a range to the calls launched on its thread. Kernel launch configuration
(grid, block, registers, shared memory) and graphId / graphNodeId are `extra` columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.event_table import (
    COLUMNS,
    EventTable,
    Kind,
    TraceMeta,
    int_dtype_for,
    member,
    narrowest,
)
from perfkit.analyzers.loaders.nsys.gpu import (
    KERNEL,
    MEMCPY,
    MEMSET,
    RUNTIME,
    Columns,
    gpu_bounds,
    read_kernels,
    read_memcpy,
    read_memset,
    runtime_chunks,
)
from perfkit.analyzers.loaders.nsys.names import Names
from perfkit.analyzers.loaders.nsys.nvtx import NvtxRows, NvtxScan, read_nvtx
from perfkit.analyzers.loaders.nsys.schema import REEXPORT, Export, open_export
from perfkit.analyzers.row_codes import per_row
from perfkit.core.memory import map_large_blocks, release_freed

_PID_MASK = ~np.int64(0xFFFFFF)  # globalTid -> globalPid
_KEY_SHIFT = 40  # join key = process code << 40 | correlationId
_BLOCK = 1 << 20  # ops per block of the (process, device) count


def os_pid(global_id: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.where(global_id >= 0, (global_id >> 24) & 0xFFFFFF, -1)


def os_tid(global_tid: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.where(global_tid >= 0, global_tid & 0xFFFFFF, -1)


def _check(export: Export) -> None:
    if KERNEL not in export.tables and "META_DATA_EXPORT" not in export.tables and "StringIds" not in export.tables:
        raise export.fail("an SQLite database but not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_KERNEL, "
                          "StringIds or META_DATA_EXPORT table); pass the file `nsys export --type sqlite` wrote")
    if "StringIds" not in export.tables:
        raise export.fail(f"table StringIds is missing (kernel, API and NVTX names are ids into it); {REEXPORT}")
    if KERNEL not in export.tables or export.count(KERNEL) == 0:
        state = "absent" if KERNEL not in export.tables else "empty"
        raise export.fail(f"no CUDA kernels in this export (table {KERNEL} is {state}); record with "
                          "`nsys profile --trace=cuda` around GPU work")


class _Devices:
    """Which GPUs each process drove, and, for a process that drove several, the GPU of the op
    each of its correlationIds enqueued (a process with one GPU needs no such index)."""

    def __init__(self, procs: npt.NDArray[np.int64], code: npt.NDArray[Any], corr: npt.NDArray[Any],
                 device: npt.NDArray[Any]) -> None:
        """`procs`: the processes with GPU work, sorted; `code`: each op's index into them."""
        self.procs = procs
        lo = int(device.min()) if len(device) else 0
        width = (int(device.max()) - lo + 1) if len(device) else 1
        counts_all = np.zeros(len(procs) * width, dtype=np.int64)  # ops per (process, device) pair
        for a in range(0, len(code), _BLOCK):
            pair = code[a : a + _BLOCK].astype(np.int64) * width
            pair += device[a : a + _BLOCK]
            pair -= lo
            counts_all += np.bincount(pair, minlength=len(counts_all))
        seen = np.flatnonzero(counts_all)
        self.devices: dict[int, list[int]] = {}
        self.primary = np.full(len(procs), -1, dtype=np.int64)
        best = np.zeros(len(procs), dtype=np.int64)
        for p, d, n in zip((seen // width).tolist(), (seen % width + lo).tolist(), counts_all[seen].tolist(), strict=True):
            self.devices.setdefault(p, []).append(d)
            if n > best[p]:
                best[p], self.primary[p] = n, d
        multi = [p for p, devs in self.devices.items() if len(devs) > 1]
        rows = np.flatnonzero(member(code, multi)) if multi else np.empty(0, dtype=np.int64)
        key = (code[rows].astype(np.int64) << _KEY_SHIFT) | np.maximum(corr[rows], 0)
        order = np.argsort(key, kind="stable")
        self.keys = key[order]
        self.key_device = device[rows][order]

    def code(self, process: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Index of each process in `procs`, -1 for a process without GPU work."""
        if len(self.procs) == 0:
            return np.full(len(process), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.procs, process), len(self.procs) - 1)
        return np.where(self.procs[pos] == process, pos, -1)

    def of_calls(self, process: npt.NDArray[np.int64], corr: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Device per API call: its op's when its process drove several GPUs, else its process's
        (primary) GPU; -1 for a process without GPU work."""
        code = self.code(process)
        out = np.where(code >= 0, self.primary[np.maximum(code, 0)], -1)
        if len(self.keys) and len(code):
            key = (np.maximum(code, 0) << _KEY_SHIFT) | np.maximum(corr, 0)
            pos = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
            hit = (code >= 0) & (corr > 0) & (self.keys[pos] == key)
            out[hit] = self.key_device[pos[hit]]
        return out


GPU_READERS = ((KERNEL, read_kernels), (MEMCPY, read_memcpy), (MEMSET, read_memset))  # kernels first
_OS_ID_MAX = 0xFFFFFF  # pid and tid are 24-bit fields of globalTid
CORRELATION_MAX = 0xFFFFFFFF  # CUPTI correlation ids are uint32 (the join keys shift them by 40 bits)


def _dtypes(export: Export, rank_offset: int, nvtx_dur: tuple[int, int] | None) -> dict[str, Any]:
    """Each stored column's dtype: the smallest that holds the export's values (from SQL bounds)."""
    lo = dict.fromkeys(("stream", "device", "correlation", "bytes", "dur_ns"), -1)
    hi = dict(lo)
    bounds = [gpu_bounds(export, t) for t, _ in GPU_READERS if t in export.tables]
    if RUNTIME in export.tables:
        export.require(RUNTIME, ("start", "end", "correlationId"))
        corr, dur = export.bounds(RUNTIME, ['COALESCE("correlationId", -1)', '"end" - "start"'])
        bounds.append({"correlation": corr, "dur_ns": dur})
    bounds.append({"dur_ns": nvtx_dur})
    for found in bounds:
        for k, b in found.items():
            if b is not None:
                lo[k], hi[k] = min(lo[k], b[0]), max(hi[k], b[1])
    if hi["correlation"] > CORRELATION_MAX or lo["correlation"] < -1:
        bad = hi["correlation"] if hi["correlation"] > CORRELATION_MAX else lo["correlation"]
        raise export.fail(f"correlationId {bad} is outside CUPTI's 32-bit range, so calls and GPU work cannot be "
                          f"linked; {REEXPORT}")
    dtypes = dict(COLUMNS)
    dtypes.update({k: int_dtype_for(lo[k], hi[k]) for k in lo})
    dtypes["pid"] = int_dtype_for(-1, _OS_ID_MAX)
    dtypes["tid"] = int_dtype_for(lo["stream"], max(hi["stream"], _OS_ID_MAX))  # GPU rows: the stream
    dtypes["rank"] = int_dtype_for(lo["device"] + rank_offset, hi["device"] + rank_offset)
    return dtypes


# columns an nsys table never fills: one shared read-only -1 per column instead of n copies
_CONSTANT = ("external_id", "dims_id", "types_id", "concrete_id", "comm_id")


class _Assembly:
    """The table's columns, allocated once (narrow dtypes) and filled part by part in place."""

    def __init__(self, n: int, dtypes: dict[str, Any]) -> None:
        self.n, self.pos = n, 0
        self.cols = {k: np.full(n, -1, dtype=dtypes[k]) for k in COLUMNS if k not in _CONSTANT}

    def reserve(self, rows: int) -> None:
        """Room for `rows` more rows (columns grown in place, one at a time)."""
        need = self.pos + rows
        if need > self.n:
            for k in self.cols:
                self._resize(k, need)
                self.cols[k][self.n :] = -1
            self.n = need

    def _resize(self, k: str, n: int) -> None:
        try:
            self.cols[k].resize(n)  # in place (realloc); refused while a view of it is alive
        except ValueError:
            self.cols[k] = np.resize(self.cols[k], n)

    def view(self, m: int) -> Columns:
        """The next `m` rows of every column, to be written by a reader; then `advance(m)`."""
        return {k: v[self.pos : self.pos + m] for k, v in self.cols.items()}

    def advance(self, m: int) -> None:
        self.pos += m

    def add(self, m: int, **values: Any) -> None:
        sl = slice(self.pos, self.pos + m)
        for k, v in values.items():
            self.cols[k][sl] = v
        self.pos += m

    def columns(self) -> Columns:
        """The filled rows (fewer than allocated when calls or ranges of processes without GPU work
        were left out: the columns are shrunk in place)."""
        n = self.pos
        if n < self.n:
            for k in self.cols:
                self._resize(k, n)
            self.n = n
        const = {k: np.broadcast_to(np.asarray(-1, dtype=np.int8), (n,)) for k in _CONSTANT}
        return {k: self.cols[k] if k in self.cols else const[k] for k in COLUMNS}


_Interned = tuple[dict[str, npt.NDArray[Any]], npt.NDArray[Any] | None]  # Interner.result()


def _read_gpu(export: Export, names: Names, table: _Assembly,
              rank_offset: int) -> tuple[_Interned, int, tuple[npt.NDArray[np.int64], npt.NDArray[Any]]]:
    """GPU ops into `table` (kernels first): (kernel launch configurations interned, how many
    kernels, the processes of the ops: sorted distinct globalPids and each op's code into them)."""
    parts: list[_Interned] = []
    config: _Interned = ({}, np.empty(0, dtype=np.int8))
    n_kernels = 0
    for name, reader in GPU_READERS:
        if name not in export.tables:
            continue
        m = export.count(name)
        into = table.view(m)
        mine = reader(export, names, into)
        procs, code = mine["process"]
        into["pid"][:] = per_row(os_pid(procs["process"]), code)
        into["tid"][:] = into["stream"]
        into["rank"][:] = into["device"].astype(np.int64) + rank_offset
        parts.append(mine["process"])
        if name == KERNEL:
            config, n_kernels = mine["config"], m
        del into
        table.advance(m)
    return config, n_kernels, _merged(parts)


def _merged(parts: list[_Interned]) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """(sorted distinct processes, code per row) from several tables' interned processes."""
    values = [p[0]["process"] for p in parts]
    procs = np.unique(np.concatenate(values)) if values else np.empty(0, dtype=np.int64)
    dt = int_dtype_for(0, len(procs))
    codes = [np.searchsorted(procs, v).astype(dt) for v in values]
    code = np.concatenate([per_row(c, p[1]) for c, p in zip(codes, parts, strict=True)]) if parts else \
        np.empty(0, dtype=dt)
    return procs, code


def load_nsys(path: str | Path, rank_offset: int = 0) -> EventTable:
    """Load one nsys SQLite export (raises TraceError with one line for anything unreadable).

    Memory: the table's columns are allocated once at their narrow dtypes and every part is
    written into them chunk by chunk (CHUNK_ROWS rows of SQL at a time)."""
    path = Path(path)
    map_large_blocks()  # the table's and the analyses' arrays go back to the OS when freed
    dropped: dict[str, int] = {}
    warnings: list[str] = []
    with open_export(path) as export:
        _check(export)
        names = Names(export)
        scan = NvtxScan(export, names)
        n_runtime = export.count(RUNTIME) if RUNTIME in export.tables else 0
        n_gpu = sum(export.count(t) for t, _ in GPU_READERS if t in export.tables)
        table = _Assembly(n_gpu + n_runtime + scan.n, _dtypes(export, rank_offset, scan.dur_bounds))
        (extra, config_code), n_kernels, (procs, process) = _read_gpu(export, names, table, rank_offset)
        devices = _Devices(procs, process, table.cols["correlation"][:n_gpu], table.cols["device"][:n_gpu])
        del process
        _add_runtime(table, runtime_chunks(export, names), devices, rank_offset, dropped)
        if any(len(d) > 1 for d in devices.devices.values()):  # ranges repeat per GPU: read them first
            nvtx = read_nvtx(export, names)
            code, copies = _nvtx_copies(nvtx, devices, dropped, warnings)
            table.reserve(int(copies.sum()))
            _add_nvtx(table, nvtx, devices, code, copies, rank_offset)
            del nvtx
        else:
            _stream_nvtx(table, scan, devices, rank_offset, dropped)
        dropped.update(scan.dropped())
        devices_named = _device_names(export)
    kept = table.pos
    cols = table.columns()
    cols["name_id"] = narrowest(cols["name_id"])  # known only now: how many names there are
    release_freed()  # the SQL chunks and reading buffers: back to the OS, not kept resident
    if names.unresolved:
        warnings.append(f"{path}: {names.unresolved} string ids are not in StringIds (named '<string id N>')")
    meta = TraceMeta(
        path=str(path), rank=rank_offset, world_size=len(devices_named), devices=tuple(devices_named.values()),
        events_read=n_gpu + n_runtime + scan.n, events_kept=kept, source="nsys",
        dropped=tuple(sorted(dropped.items())), warnings=tuple(warnings),
    )
    kernel_rows = np.arange(n_kernels, dtype=int_dtype_for(0, kept))  # kernels come first
    return EventTable(cols, names.table(), (), (meta,), extra, kernel_rows, config_code)


def _add_runtime(table: _Assembly, chunks: Iterator[Columns], devices: _Devices, rank_offset: int,
                 dropped: dict[str, int]) -> None:
    """CUDA API calls, chunk by chunk: each takes its op's GPU (else its process's primary one);
    calls of processes without GPU work are left out and counted."""
    lost = 0
    for chunk in chunks:
        dev = devices.of_calls(chunk["global_tid"] & _PID_MASK, chunk["correlation"])
        keep = dev >= 0
        if not keep.all():
            lost += int((~keep).sum())
            chunk = {k: v[keep] for k, v in chunk.items()}
            dev = dev[keep]
        gtid = chunk["global_tid"]
        table.add(len(dev), name_id=chunk["name_id"], kind=int(Kind.RUNTIME), ts_ns=chunk["ts_ns"],
                  dur_ns=chunk["dur_ns"], pid=os_pid(gtid), tid=os_tid(gtid), correlation=chunk["correlation"],
                  rank=dev + rank_offset)
    if lost:
        dropped["CUDA API call of a process without GPU work"] = lost


def _stream_nvtx(table: _Assembly, scan: NvtxScan, devices: _Devices, rank_offset: int, dropped: dict[str, int]) -> None:
    """NVTX ranges written chunk by chunk into the table (each process drives one GPU at most)."""
    first = table.pos
    lost = 0
    for ts, dur, gtid, codes in scan.chunks():
        code = devices.code(gtid & _PID_MASK)
        keep = code >= 0
        if not keep.all():
            lost += int((~keep).sum())
            ts, dur, gtid, codes, code = ts[keep], dur[keep], gtid[keep], codes[keep], code[keep]
        table.add(len(ts), name_id=codes, kind=int(Kind.USER_ANNOTATION), ts_ns=ts, dur_ns=dur, pid=os_pid(gtid),
                  tid=os_tid(gtid), rank=devices.primary[code] + rank_offset)
    if lost:
        dropped["NVTX range of a process without GPU work"] = lost
    if table.pos > first:
        written = table.cols["name_id"][first : table.pos]
        written[:] = scan.name_lut()[written]


def _nvtx_copies(nvtx: NvtxRows, devices: _Devices, dropped: dict[str, int],
                 warnings: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(process code, rows to write) per range: one per GPU its process used, 0 without one."""
    code = devices.code(nvtx.global_tid & _PID_MASK)
    n_dev = np.asarray([len(devices.devices.get(c, [])) for c in range(len(devices.procs))] + [0], dtype=np.int64)
    copies = n_dev[np.where(code >= 0, code, len(devices.procs))]
    if (copies == 0).any():
        dropped["NVTX range of a process without GPU work"] = int((copies == 0).sum())
    if (copies > 1).any():
        warnings.append(f"{int((copies > 1).sum())} NVTX ranges belong to a process that drove several GPUs: "
                        "each is projected once per GPU (count and CPU time repeat per GPU)")
    return code, copies


def _add_nvtx(table: _Assembly, nvtx: NvtxRows, devices: _Devices, code: npt.NDArray[np.int64],
              copies: npt.NDArray[np.int64], rank_offset: int) -> None:
    if (copies == 1).all():  # the usual case: no copies, no index arrays
        gtid = nvtx.global_tid
        table.add(len(gtid), name_id=nvtx.name_id, kind=int(Kind.USER_ANNOTATION), ts_ns=nvtx.ts_ns,
                  dur_ns=nvtx.dur_ns, pid=os_pid(gtid), tid=os_tid(gtid),
                  rank=devices.primary[np.maximum(code, 0)] + rank_offset)
        return
    idx = np.repeat(np.arange(len(code)), copies)
    nth = np.arange(len(idx)) - np.repeat(np.cumsum(copies) - copies, copies)
    dev = np.asarray([devices.devices[int(code[i])][int(j)] for i, j in zip(idx, nth, strict=True)], dtype=np.int64)
    gtid = nvtx.global_tid[idx]
    table.add(len(idx), name_id=nvtx.name_id[idx], kind=int(Kind.USER_ANNOTATION), ts_ns=nvtx.ts_ns[idx],
              dur_ns=nvtx.dur_ns[idx], pid=os_pid(gtid), tid=os_tid(gtid), rank=dev + rank_offset)


def _device_names(export: Export) -> dict[int, str]:
    """{deviceId: name} from TARGET_INFO_GPU when the export has it, else the ids seen."""
    if export.has("TARGET_INFO_GPU", "id") and export.has("TARGET_INFO_GPU", "name"):
        rows = export.query('SELECT "id", "name" FROM TARGET_INFO_GPU ORDER BY "id"')
        if rows:
            return {int(i): str(n) for i, n in rows}
    ids = export.query(f'SELECT DISTINCT "deviceId" FROM {KERNEL} ORDER BY 1')
    return {int(i): f"cuda:{int(i)}" for (i,) in ids}

