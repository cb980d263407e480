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
Every table is checked at this boundary (analyzers.loaders.nsys.checks): rows with unusable
times, device, stream or thread are left out, counted per table and column in `meta.dropped`
and the first located in `meta.warnings`; unusable describing values are read as absent and
counted in `meta.coerced`; a GPU op or API call repeating an earlier one in every column read
is left out as a copy; an export none of whose kernels is usable, or whose durations sum past
`SUM_LIMIT`, is refused with one line. Device ids are mapped to dense indices before anything
is sized by them.
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
from perfkit.analyzers.loaders.nsys.checks import SUM_LIMIT, Findings, TableCheck, is_int
from perfkit.analyzers.loaders.nsys.copies import later_copies
from perfkit.analyzers.loaders.nsys.gpu import (
    KERNEL,
    MEMCPY,
    MEMSET,
    RUNTIME,
    Columns,
    Unnamed,
    gpu_check,
    read_kernels,
    read_memcpy,
    read_memset,
    runtime_check,
    runtime_chunks,
)
from perfkit.analyzers.loaders.nsys.names import Names
from perfkit.analyzers.loaders.nsys.nvtx import NVTX, NvtxRows, NvtxScan, read_nvtx
from perfkit.analyzers.loaders.nsys.schema import REEXPORT, Export, as_text, open_export
from perfkit.analyzers.loaders.nsys.trusted import Damaged
from perfkit.analyzers.loaders.nsys.unread import unread_event_tables
from perfkit.analyzers.memory.gc_paused import gc_paused
from perfkit.analyzers.row_codes import per_row
from perfkit.core.errors import TraceError
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
    each of its correlationIds enqueued (a process with one GPU needs no such index). Device
    ids are mapped to dense indices first: nothing is sized by a raw deviceId."""

    def __init__(self, procs: npt.NDArray[np.int64], code: npt.NDArray[Any], corr: npt.NDArray[Any],
                 device: npt.NDArray[Any]) -> None:
        """`procs`: the processes with GPU work, sorted; `code`: each op's index into them."""
        self.procs = procs
        ids = np.unique(device)  # the distinct deviceIds, sorted
        seen, counts = _pair_counts(code, device, ids, len(procs))
        self.devices: dict[int, list[int]] = {}
        self.primary = np.full(len(procs), -1, dtype=np.int64)
        best = np.zeros(len(procs), dtype=np.int64)
        width = max(len(ids), 1)
        for p, d, n in zip((seen // width).tolist(), ids[seen % width].tolist(), counts.tolist(), strict=True):
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


def _pair_counts(code: npt.NDArray[Any], device: npt.NDArray[Any], ids: npt.NDArray[Any],
                 n_procs: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(pair = process code * len(ids) + dense device index, ops) for the pairs that occur."""
    width = max(len(ids), 1)
    if n_procs * width <= 1 << 24:  # the usual case: a small table of every pair, counted by blocks
        counts_all = np.zeros(n_procs * width, dtype=np.int64)
        for a in range(0, len(code), _BLOCK):
            pair = code[a : a + _BLOCK].astype(np.int64) * width
            pair += np.searchsorted(ids, device[a : a + _BLOCK])
            counts_all += np.bincount(pair, minlength=len(counts_all))
        seen = np.flatnonzero(counts_all)
        return seen, counts_all[seen]
    pair = code.astype(np.int64) * width + np.searchsorted(ids, device)  # many processes and GPUs
    seen, counts = np.unique(pair, return_counts=True)
    return seen, counts.astype(np.int64)


GPU_READERS = ((KERNEL, read_kernels), (MEMCPY, read_memcpy), (MEMSET, read_memset))  # kernels first
_OS_ID_MAX = 0xFFFFFF  # pid and tid are 24-bit fields of globalTid


# columns whose dtype the values written decide (the smallest that holds them, and -1): every
# value offered is fitted, also of rows left out afterwards (copies, processes without GPU work)
_SIZED = ("stream", "device", "correlation", "bytes", "dur_ns", "tid", "rank")

# columns an nsys table never fills: one shared read-only -1 per column instead of n copies
_CONSTANT = ("external_id", "dims_id", "types_id", "concrete_id", "comm_id")


class _Assembly:
    """The table's columns, allocated once (narrow dtypes) and filled part by part in place; a
    column of `_SIZED` is widened (one copy) when a value written does not fit its dtype, so
    nothing needs the values' bounds before they are read."""

    def __init__(self, n: int, rank_offset: int) -> None:
        self.n, self.pos = n, 0
        self.range = dict.fromkeys(_SIZED, (-1, -1))
        self.range["tid"] = (-1, _OS_ID_MAX)  # CPU rows: the OS thread id; GPU rows: the stream
        self.range["rank"] = (rank_offset - 1, rank_offset - 1)
        dtypes = dict(COLUMNS)
        dtypes["pid"] = int_dtype_for(-1, _OS_ID_MAX)
        dtypes.update({k: int_dtype_for(*r) for k, r in self.range.items()})
        self.cols = {k: np.full(n, -1, dtype=dtypes[k]) for k in COLUMNS if k not in _CONSTANT}

    def fit(self, k: str, values: Any) -> None:
        """Widen column `k` when `values` (about to be written, or read and left out) need it."""
        if k not in self.range or np.size(values) == 0:
            return
        lo, hi = self.range[k]
        a, b = int(np.min(values)), int(np.max(values))
        if a < lo or b > hi:
            self.range[k] = lo, hi = min(lo, a), max(hi, b)
            dt = int_dtype_for(lo, hi)
            if dt.itemsize > self.cols[k].dtype.itemsize:
                self.cols[k] = self.cols[k].astype(dt)

    def write(self, k: str, a: int, b: int, values: Any) -> None:
        self.fit(k, values)
        self.cols[k][a:b] = values

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

    def view(self, m: int) -> dict[str, _Slot]:
        """The next `m` rows of every column, to be written by a reader; then `advance(m)`."""
        return {k: _Slot(self, k, self.pos, m) for k in self.cols}

    def advance(self, m: int) -> None:
        self.pos += m

    def add(self, m: int, **values: Any) -> None:
        for k, v in values.items():
            self.write(k, self.pos, self.pos + m, v)
        self.pos += m

    def keep(self, first: int, keep: npt.NDArray[np.bool_]) -> None:
        """Keep only the `keep` rows of the last part written (rows `first`.. `pos`), in order."""
        assert first + len(keep) == self.pos
        for col in self.cols.values():
            part = col[first : self.pos]
            part[: int(keep.sum())] = part[keep]
        self.pos = first + int(keep.sum())

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


class _Slot:
    """Rows `first`.. `first + m` of one column of an `_Assembly`, written through it (so the
    column widens when a value needs it); `values` reads them back."""

    def __init__(self, table: _Assembly, k: str, first: int, m: int) -> None:
        self.table, self.k, self.first, self.m = table, k, first, m

    def __len__(self) -> int:
        return self.m

    def __setitem__(self, at: slice, values: Any) -> None:
        a, b, _ = at.indices(self.m)
        self.table.write(self.k, self.first + a, self.first + b, values)

    @property
    def values(self) -> npt.NDArray[Any]:
        return self.table.cols[self.k][self.first : self.first + self.m]


_Interned = tuple[dict[str, npt.NDArray[Any]], npt.NDArray[Any] | None]  # Interner.result()
_GPU_IDENTITY = ("ts_ns", "dur_ns", "device", "stream", "correlation", "name_id", "pid", "bytes")
_CALL_IDENTITY = ("ts_ns", "dur_ns", "pid", "tid", "correlation", "name_id")


def _kept(interned: _Interned, keep: npt.NDArray[np.bool_]) -> _Interned:
    """An `Interner.result()` for the kept rows only."""
    values, code = interned
    if code is None:  # every row's own values
        return {k: v[keep] for k, v in values.items()}, None
    return values, code[keep]


def _drop_copies(table: _Assembly, first: int, columns: tuple[str, ...], name: str, found: Findings) -> npt.NDArray[np.bool_] | None:
    """Leave out the rows of the last part (from `first`) that repeat an earlier one; the kept
    mask, or None when there were none."""
    copies = later_copies([table.cols[k][first : table.pos] for k in columns])
    if not copies.any():
        return None
    found.drop(f"{name}: a copy of an earlier row (every column read equal)", int(copies.sum()))
    keep = ~copies
    table.keep(first, keep)
    return keep


def _read_gpu(export: Export, names: Names, table: _Assembly, rank_offset: int,
              found: Findings) -> tuple[_Interned, int, tuple[npt.NDArray[np.int64], npt.NDArray[Any]], Unnamed | None]:
    """GPU ops into `table` (kernels first): (kernel launch configurations interned, how many
    kernels, the processes of the ops: sorted distinct globalPids and each op's code into them,
    the kernels named by their launch configuration)."""
    parts: list[_Interned] = []
    config: _Interned = ({}, np.empty(0, dtype=np.int8))
    n_kernels = 0
    unnamed = None
    for name, reader in GPU_READERS:
        if name not in export.tables:
            continue
        first = table.pos
        m = gpu_check(export, name).kept
        into = table.view(m)
        mine = reader(export, names, into)
        procs, code = mine["process"]
        into["pid"][:] = per_row(os_pid(procs["process"]), code)
        into["tid"][:] = into["stream"].values
        into["rank"][:] = into["device"].values.astype(np.int64) + rank_offset
        del into
        table.advance(m)
        keep = _drop_copies(table, first, _GPU_IDENTITY, name, found)
        parts.append(mine["process"] if keep is None else _kept(mine["process"], keep))
        if name == KERNEL:
            config = mine["config"] if keep is None else _kept(mine["config"], keep)
            n_kernels, unnamed = table.pos - first, mine["unnamed"]
    return config, n_kernels, _merged(parts), unnamed


def _merged(parts: list[_Interned]) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
    """(sorted distinct processes, code per row) from several tables' interned processes."""
    values = [p[0]["process"] for p in parts]
    procs = np.unique(np.concatenate(values)) if values else np.empty(0, dtype=np.int64)
    dt = int_dtype_for(0, len(procs))
    codes = [np.searchsorted(procs, v).astype(dt) for v in values]
    code = np.concatenate([per_row(c, p[1]) for c, p in zip(codes, parts, strict=True)]) if parts else \
        np.empty(0, dtype=dt)
    return procs, code


def _refuse_unusable(export: Export, check: TableCheck) -> None:
    """One line when no kernel of the export can be read (every one left out)."""
    if check.kept == 0:
        reasons = ", ".join(f"{r.split('.', 1)[1]} ({n:,})" for r, n in sorted(check.dropped.items(), key=lambda kv: -kv[1]))
        first = check.located(1, then="")
        where = f"; first: {first[0].split(': ', 1)[1]}" if first else ""
        raise export.fail(f"none of the {check.total:,} kernels of {KERNEL} is usable: {reasons}{where}; {REEXPORT}")


def load_nsys(path: str | Path, rank_offset: int = 0) -> EventTable:
    """Load one nsys SQLite export (raises TraceError with one line for anything unreadable).

    Read the fast way first (analyzers.loaders.nsys.trusted: every chunk verified as fetched, no
    SQL pre-scan); an export with a row the checks would leave out or clean is read again with
    the checks' SQL scan, counts and filters. Memory: the table's columns are allocated once at
    narrow dtypes and every part is written into them chunk by chunk (CHUNK_ROWS rows at a time)."""
    path = Path(path)
    map_large_blocks()  # the table's and the analyses' arrays go back to the OS when freed
    with gc_paused():  # millions of SQL row tuples, no cycles: the collector would walk them all
        try:
            return _load(path, rank_offset, trusting=True)
        except Damaged:
            pass  # outside the handler: the first try's arrays are freed before the second read
        return _load(path, rank_offset, trusting=False)


def _load(path: Path, rank_offset: int, trusting: bool) -> EventTable:
    found = Findings()
    with open_export(path) as export:
        export.trusting = trusting
        _check(export)
        checks = [gpu_check(export, t) for t, _ in GPU_READERS if t in export.tables]
        _refuse_unusable(export, checks[0])
        if RUNTIME in export.tables:
            checks.append(runtime_check(export))
        names = Names(export)
        scan = NvtxScan(export, names)
        if scan.check is not None:
            checks.append(scan.check)
        for check in checks:
            found.add(check)
        n_runtime = runtime_check(export).kept if RUNTIME in export.tables else 0
        n_gpu = sum(gpu_check(export, t).kept for t, _ in GPU_READERS if t in export.tables)
        table = _Assembly(n_gpu + n_runtime + scan.n, rank_offset)
        (extra, config_code), n_kernels, (procs, process), unnamed = _read_gpu(export, names, table, rank_offset, found)
        n_gpu = table.pos
        devices = _Devices(procs, process, table.cols["correlation"][:n_gpu], table.cols["device"][:n_gpu])
        del process
        _add_runtime(table, runtime_chunks(export, names), devices, rank_offset, found)
        if any(len(d) > 1 for d in devices.devices.values()):  # ranges repeat per GPU: read them first
            nvtx = read_nvtx(scan)
            table.fit("dur_ns", nvtx.dur_ns)  # every range read sizes the column
            code, copies = _nvtx_copies(path, nvtx, devices, found)
            table.reserve(int(copies.sum()))
            _add_nvtx(table, nvtx, devices, code, copies, rank_offset)
            del nvtx
        else:
            _stream_nvtx(table, scan, devices, rank_offset, found)
        devices_named = _device_names(export, found)
        unread = unread_event_tables(export, {KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX})
    kept = table.pos
    cols = table.columns()
    cols["name_id"] = narrowest(cols["name_id"])  # known only now: how many names there are
    release_freed()  # the SQL chunks and reading buffers: back to the OS, not kept resident
    _check_sums(path, cols)
    _name_warnings(path, names, unnamed, found)
    meta = TraceMeta(
        path=str(path), rank=rank_offset, world_size=len(devices_named), devices=tuple(devices_named.values()),
        events_read=sum(c.total for c in checks), events_kept=kept, source="nsys",
        dropped=tuple(sorted(found.dropped.items())), coerced=tuple(sorted(found.coerced.items())),
        warnings=tuple(found.lines()), unknown_categories=unread,
    )
    kernel_rows = np.arange(n_kernels, dtype=int_dtype_for(0, kept))  # kernels come first
    return EventTable(cols, names.table(), (), (meta,), extra, kernel_rows, config_code)


_SUMMED = (("GPU op", (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)), ("CUDA API call", (Kind.RUNTIME,)),
           ("NVTX range", (Kind.USER_ANNOTATION,)))


def _check_sums(path: Path, cols: Columns) -> None:
    """Refuse an export whose durations of one kind sum past SUM_LIMIT: each is a valid time, but
    their totals would leave int64 (negative totals) in the tables."""
    kind = cols["kind"]
    for what, kinds in _SUMMED:
        total = float(np.sum(cols["dur_ns"], dtype=np.float64, where=member(kind, [int(k) for k in kinds])))
        if total > SUM_LIMIT:
            raise TraceError(f"{path}: the {what} durations sum to {total / 3.15576e16:,.0f} years: its times are "
                             f"damaged; {REEXPORT}")


def _name_warnings(path: Path, names: Names, unnamed: Unnamed | None, found: Findings) -> None:
    if names.unresolved:
        n = len(names.unresolved)
        found.warnings.append(f"{path}: {n:,} string ids are not in StringIds or have no text there "
                              f"(named '<no name: string id N>', one name per id; e.g. {min(names.unresolved)})")
    if unnamed is not None and unnamed.n:
        found.warnings.append(f"{path}: {unnamed.n:,} kernels have no usable name id (demangledName, shortName, "
                              f"mangledName): named by launch configuration, {len(unnamed.distinct):,} names "
                              "'<unnamed kernel: grid ..., block ...>'")


def _add_runtime(table: _Assembly, chunks: Iterator[Columns], devices: _Devices, rank_offset: int,
                 found: Findings) -> None:
    """CUDA API calls, chunk by chunk: each takes its op's GPU (else its process's primary one);
    calls of processes without GPU work, and copies of an earlier call, are left out and counted."""
    first = table.pos
    lost = 0
    for chunk in chunks:
        dev = devices.of_calls(chunk["global_tid"] & _PID_MASK, chunk["correlation"])
        table.fit("correlation", chunk["correlation"])  # every call read sizes the columns
        table.fit("dur_ns", chunk["dur_ns"])
        keep = dev >= 0
        if not keep.all():
            lost += int((~keep).sum())
            chunk = {k: v[keep] for k, v in chunk.items()}
            dev = dev[keep]
        gtid = chunk["global_tid"]
        table.add(len(dev), name_id=chunk["name_id"], kind=int(Kind.RUNTIME), ts_ns=chunk["ts_ns"],
                  dur_ns=chunk["dur_ns"], pid=os_pid(gtid), tid=os_tid(gtid), correlation=chunk["correlation"],
                  rank=dev + rank_offset)
    found.drop("CUDA API call of a process without GPU work", lost)
    _drop_copies(table, first, _CALL_IDENTITY, RUNTIME, found)


def _stream_nvtx(table: _Assembly, scan: NvtxScan, devices: _Devices, rank_offset: int, found: Findings) -> None:
    """NVTX ranges written chunk by chunk into the table (each process drives one GPU at most)."""
    first = table.pos
    lost = 0
    for ts, dur, gtid, codes in scan.chunks():
        code = devices.code(gtid & _PID_MASK)
        table.fit("dur_ns", dur)  # every range read sizes the column
        keep = code >= 0
        if not keep.all():
            lost += int((~keep).sum())
            ts, dur, gtid, codes, code = ts[keep], dur[keep], gtid[keep], codes[keep], code[keep]
        table.add(len(ts), name_id=codes, kind=int(Kind.USER_ANNOTATION), ts_ns=ts, dur_ns=dur, pid=os_pid(gtid),
                  tid=os_tid(gtid), rank=devices.primary[code] + rank_offset)
    found.drop("NVTX range of a process without GPU work", lost)
    if table.pos > first:
        written = table.cols["name_id"][first : table.pos]
        written[:] = scan.name_lut()[written]


def _nvtx_copies(path: Path, nvtx: NvtxRows, devices: _Devices,
                 found: Findings) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(process code, rows to write) per range: one per GPU its process used, 0 without one."""
    code = devices.code(nvtx.global_tid & _PID_MASK)
    n_dev = np.asarray([len(devices.devices.get(c, [])) for c in range(len(devices.procs))] + [0], dtype=np.int64)
    copies = n_dev[np.where(code >= 0, code, len(devices.procs))]
    found.drop("NVTX range of a process without GPU work", int((copies == 0).sum()))
    if (copies > 1).any():
        found.warnings.append(f"{path}: {int((copies > 1).sum()):,} NVTX ranges belong to a process that drove several GPUs: "
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


_GPU_INFO = "TARGET_INFO_GPU"


def _device_names(export: Export, found: Findings) -> dict[int, str]:
    """{deviceId: name} from TARGET_INFO_GPU when the export has it (rows whose id is not an
    integer are ignored, with a warning), else the deviceIds of the kernels read."""
    if export.has(_GPU_INFO, "id") and export.has(_GPU_INFO, "name"):
        rows = export.query(f'SELECT "id", CAST("name" AS BLOB) FROM {_GPU_INFO} WHERE {is_int("id")} ORDER BY "id"')
        odd = export.count(_GPU_INFO, f"WHERE NOT {is_int('id')}")
        if odd:
            found.warnings.append(f"{export.path}: {_GPU_INFO}: {odd:,} rows whose id is not an integer are ignored")
        if rows:
            return {int(i): as_text(n) or f"cuda:{int(i)}" for i, n in rows}
    ids = export.query(f'SELECT DISTINCT "deviceId" FROM {KERNEL} {gpu_check(export, KERNEL).where} ORDER BY 1')
    return {int(i): f"cuda:{int(i)}" for (i,) in ids}
