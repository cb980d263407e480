"""Nsight Systems SQLite exports (`nsys export --type sqlite`) -> `EventTable`.

    from analyzers.nsys_sqlite import load_nsys
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

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from analyzers.event_table import COLUMNS, EventTable, Kind, TraceMeta
from analyzers.nsys_gpu import (
    KERNEL,
    KERNEL_CONFIG,
    Columns,
    read_kernels,
    read_memcpy,
    read_memset,
    read_runtime,
)
from analyzers.nsys_names import Names
from analyzers.nsys_nvtx import NvtxRows, NvtxScan, read_nvtx
from analyzers.nsys_schema import REEXPORT, Export, open_export

_PID_MASK = ~np.int64(0xFFFFFF)  # globalTid -> globalPid
_KEY_SHIFT = 40  # join key = process code << 40 | correlationId


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
    """Which GPUs each process drove, and the op each (process, correlationId) enqueued."""

    def __init__(self, gpu: Columns) -> None:
        self.procs = np.unique(gpu["process"])
        code = np.searchsorted(self.procs, gpu["process"])
        key = (code.astype(np.int64) << _KEY_SHIFT) | np.maximum(gpu["correlation"], 0)
        order = np.argsort(key, kind="stable")
        self.keys, self.key_device = key[order], gpu["device"][order]
        pairs, counts = np.unique(np.stack([code, gpu["device"].astype(np.int64)], axis=1), axis=0, return_counts=True)
        self.devices: dict[int, list[int]] = {}
        self.primary = np.full(len(self.procs), -1, dtype=np.int64)
        best = np.zeros(len(self.procs), dtype=np.int64)
        for (p, d), n in zip(pairs.tolist(), counts.tolist(), strict=True):
            self.devices.setdefault(p, []).append(d)
            if n > best[p]:
                best[p], self.primary[p] = n, d

    def code(self, process: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Index of each process in `procs`, -1 for a process without GPU work."""
        if len(self.procs) == 0:
            return np.full(len(process), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.procs, process), len(self.procs) - 1)
        return np.where(self.procs[pos] == process, pos, -1)

    def of_calls(self, process: npt.NDArray[np.int64], corr: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Device per API call: its op's, else its process's primary GPU; -1 for none."""
        code = self.code(process)
        out = np.where(code >= 0, self.primary[np.maximum(code, 0)], -1)
        if len(self.keys) and len(code):
            key = (np.maximum(code, 0) << _KEY_SHIFT) | np.maximum(corr, 0)
            pos = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
            hit = (code >= 0) & (corr > 0) & (self.keys[pos] == key)
            out[hit] = self.key_device[pos[hit]]
        return out


def _gpu_columns(export: Export, names: Names) -> tuple[Columns, int]:
    """GPU ops (kernels first, then memcpy, memset) and how many are kernels."""
    parts = [p for p in (read_kernels(export, names), read_memcpy(export, names), read_memset(export, names)) if p]
    out: Columns = {k: parts[0].pop(k) for k in KERNEL_CONFIG}
    for k in ("ts_ns", "dur_ns", "device", "stream", "correlation", "process", "name_id", "kind", "bytes"):
        out[k] = np.concatenate([p.pop(k) for p in parts])
    return out, len(out["grid_x"])


# columns an nsys table never fills: one shared read-only -1 per column instead of n copies
_CONSTANT = ("external_id", "dims_id", "types_id", "concrete_id", "comm_id")


class _Assembly:
    """The table's columns, preallocated once and filled part by part (GPU, API calls, NVTX)."""

    def __init__(self, n: int) -> None:
        self.n, self.pos = n, 0
        self.cols = {k: np.full(n, -1, dtype=dt) for k, dt in COLUMNS.items() if k not in _CONSTANT}

    def add(self, m: int, **values: Any) -> None:
        sl = slice(self.pos, self.pos + m)
        for k, v in values.items():
            self.cols[k][sl] = v
        self.pos += m

    def columns(self) -> Columns:
        """The filled rows (fewer than allocated when ranges of processes without GPU work were left out)."""
        n = self.pos
        const = {k: np.broadcast_to(np.asarray(-1, dtype=COLUMNS[k]), (n,)) for k in _CONSTANT}
        return {k: (self.cols[k] if n == self.n else self.cols[k][:n].copy()) if k in self.cols else const[k]
                for k in COLUMNS}


def load_nsys(path: str | Path, rank_offset: int = 0) -> EventTable:
    """Load one nsys SQLite export (raises TraceError with one line for anything unreadable)."""
    path = Path(path)
    dropped: dict[str, int] = {}
    warnings: list[str] = []
    with open_export(path) as export:
        _check(export)
        names = Names(export)
        gpu, n_kernels = _gpu_columns(export, names)
        devices = _Devices(gpu)
        runtime = read_runtime(export, names)
        rt_dev = devices.of_calls(runtime["global_tid"] & _PID_MASK, runtime["correlation"]) if runtime else None
        n_rt = int((rt_dev >= 0).sum()) if rt_dev is not None else 0
        scan = NvtxScan(export, names)
        multi = any(len(d) > 1 for d in devices.devices.values())
        nvtx = read_nvtx(export, names) if multi else None  # ranges repeat per GPU: read them first
        n_nvtx = scan.n
        copies = _nvtx_copies(nvtx, devices, dropped, warnings) if nvtx is not None else None
        n_gpu = len(gpu["ts_ns"])
        table = _Assembly(n_gpu + n_rt + (int(copies[1].sum()) if copies is not None else n_nvtx))
        table.add(n_gpu, name_id=gpu["name_id"], kind=gpu["kind"], ts_ns=gpu["ts_ns"], dur_ns=gpu["dur_ns"],
                  pid=os_pid(gpu["process"]), tid=gpu["stream"], stream=gpu["stream"], device=gpu["device"],
                  correlation=gpu["correlation"], bytes=gpu["bytes"], rank=gpu["device"].astype(np.int64) + rank_offset)
        extra = {k: gpu.pop(k) for k in KERNEL_CONFIG}
        del gpu
        n_runtime = len(rt_dev) if rt_dev is not None else 0
        if runtime is not None and rt_dev is not None:
            _add_runtime(table, runtime, rt_dev, n_rt, rank_offset, dropped)
            del runtime, rt_dev
        if nvtx is not None and copies is not None:
            _add_nvtx(table, nvtx, devices, copies[0], copies[1], rank_offset)
            del nvtx
        else:
            _stream_nvtx(table, scan, devices, rank_offset, dropped)
        dropped.update(scan.dropped())
        devices_named = _device_names(export)
    cols = table.columns()
    if names.unresolved:
        warnings.append(f"{path}: {names.unresolved} string ids are not in StringIds (named '<string id N>')")
    meta = TraceMeta(
        path=str(path), rank=rank_offset, world_size=len(devices_named), devices=tuple(devices_named.values()),
        events_read=n_gpu + n_runtime + n_nvtx, events_kept=table.pos, source="nsys",
        dropped=tuple(sorted(dropped.items())), warnings=tuple(warnings),
    )
    return EventTable(cols, names.table(), (), (meta,), extra, np.arange(n_kernels, dtype=np.int64))


def _add_runtime(table: _Assembly, runtime: Columns, dev: npt.NDArray[np.int64], n_kept: int, rank_offset: int,
                 dropped: dict[str, int]) -> None:
    keep = dev >= 0
    if n_kept < len(keep):
        dropped["CUDA API call of a process without GPU work"] = len(keep) - n_kept
    gtid = runtime["global_tid"][keep]
    table.add(n_kept, name_id=runtime["name_id"][keep], kind=int(Kind.RUNTIME), ts_ns=runtime["ts_ns"][keep],
              dur_ns=runtime["dur_ns"][keep], pid=os_pid(gtid), tid=os_tid(gtid),
              correlation=runtime["correlation"][keep], rank=dev[keep] + rank_offset)


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

