"""rocprofv3 JSON (rocprofiler-sdk, `rocprofv3 --kernel-trace --memory-copy-trace
--hip-runtime-trace --output-format json`) -> `EventTable`.

Rows:
- a kernel dispatch: Kind.KERNEL named by its kernel symbol (`formatted_kernel_name`, the
  demangled name; else `demangled_kernel_name` without its " [clone .kd]"; else the mangled
  `kernel_name`; else "kernel_id N"), on its GPU agent; `stream` is the HIP stream
  (`stream_id`, rocprofv3 of ROCm 6.4+) or, in files without one, the HSA queue; `tid` is the
  HSA queue; correlation = `correlation_id.internal`;
- a memory copy: Kind.MEMCPY named by its operation ("MEMORY_COPY_HOST_TO_DEVICE", ...), on
  its GPU agent (the destination when a GPU, else the source), `bytes` as recorded;
- a HIP API call (`hip_api`, runtime and compiler API): Kind.RUNTIME named by its operation
  ("hipLaunchKernel", "hipMemcpyAsync", ...), `tid` the host thread; it takes the rank of the
  GPU op with the same internal correlation id (the one it launched), else the process's first.
Ranks: one per (process, GPU agent) with GPU work, numbered from `rank_offset` in the order of
the file's processes and then of the GPUs' indices (`logical_node_type_id`); `device` is that
index. A file with several processes says so in `TraceMeta.warnings`. `pid` is the GPU index
for GPU rows (as Kineto writes it) and the process id for host rows.
Launch configuration goes to `extra` (sparse, interned, kernel rows only): grid_x/y/z in
workgroups (HSA grid sizes count work-items: rounded up per axis), block_x/y/z the workgroup
size, registers the kernel's architected VGPRs per work-item, static_smem_bytes the LDS bytes
of the dispatch (`group_segment_size`). Dispatches that end before they start are dropped and
counted. Not read: HSA API, markers (roctx), RCCL API, scratch memory, counters, page
migration, the CSV and rocpd outputs.
The whole document is decoded at once into typed records (no dict per record): memory is the
uncompressed JSON plus about 100 bytes per record while decoding.
"""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np

from perfkit.analyzers.event_table import (
    COLUMNS,
    EventTable,
    Kind,
    TraceMeta,
    int_dtype_for,
    narrow_columns,
)
from perfkit.analyzers.loaders.rocprof.schema import (
    GPU_AGENT_TYPE,
    Agent,
    KernelSymbol,
    Process,
    decode_rocprof,
)
from perfkit.analyzers.row_codes import Interner

EXTRA_KEYS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers", "static_smem_bytes")
_ROW = ("name_id", "kind", "ts_ns", "dur_ns", "pid", "tid", "stream", "device", "correlation", "bytes", "rank")
_CLONE = " [clone .kd]"
TIME_LIMIT_NS = 1 << 62  # |start|, |end| below this: the difference of any two times fits in int64
_INT64 = 1 << 63


def _int64(value: int) -> int:
    """`value` when it fits a signed 64-bit column, else -1 (unknown): handles are 64-bit unsigned."""
    return value if -_INT64 <= value < _INT64 else -1


def kernel_name(symbol: KernelSymbol | None, kernel_id: int) -> str:
    if symbol is None:
        return f"kernel_id {kernel_id}"
    if symbol.formatted_kernel_name:
        return symbol.formatted_kernel_name
    if symbol.demangled_kernel_name:
        return symbol.demangled_kernel_name.removesuffix(_CLONE)
    return symbol.kernel_name or f"kernel_id {kernel_id}"


def _workgroups(grid: int, block: int) -> int:
    return -(-grid // block) if block > 0 and grid >= 0 else -1


class _Builder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.names: dict[str, int] = {}
        self.rows: dict[str, array[int]] = {k: array("q") for k in _ROW}
        self.extra: dict[str, array[int]] = {k: array("q") for k in EXTRA_KEYS}
        self.extra_rows: array[int] = array("q")
        self.dropped: dict[str, int] = {}
        self.read = 0

    def name(self, text: str) -> int:
        return self.names.setdefault(text, len(self.names))

    def add(self, *values: int) -> bool:
        """One row (values in _ROW order, dur_ns as an end time); False when it ends before it starts."""
        self.read += 1
        start, end = values[2], values[3]
        why = "ends before it starts" if end < start else "start or end beyond 2^62 ns (146 years)" \
            if not -TIME_LIMIT_NS < start <= end < TIME_LIMIT_NS else None
        if why is not None:
            self.dropped[why] = self.dropped.get(why, 0) + 1
            return False
        for key, value in zip(_ROW, (*values[:2], start, end - start, *map(_int64, values[4:])), strict=True):
            self.rows[key].append(value)
        return True


def _op_name(process: Process, kind: int, operation: int, fallback: str) -> str:
    kinds = process.strings.buffer_records
    if 0 <= kind < len(kinds) and 0 <= operation < len(kinds[kind].operations):
        return kinds[kind].operations[operation]
    return f"{fallback} operation {operation}"


def _gpu_ranks(processes: list[Process], rank_offset: int) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], Agent]]:
    """(process index, agent handle) -> rank, for the GPU agents with GPU work, and -> agent."""
    used: list[tuple[int, int, int]] = []  # (process, GPU index, handle)
    agents: dict[tuple[int, int], Agent] = {}
    for p, proc in enumerate(processes):
        gpus = [a for a in proc.agents if a.type == GPU_AGENT_TYPE]
        index = {a.id.handle: (a.logical_node_type_id if a.logical_node_type_id >= 0 else i) for i, a in enumerate(gpus)}
        busy = {r.dispatch_info.agent_id.handle for r in proc.buffer_records.kernel_dispatch}
        for c in proc.buffer_records.memory_copy:
            busy.add(c.dst_agent_id.handle if c.dst_agent_id.handle in index else c.src_agent_id.handle)
        for a in gpus:
            agents[(p, a.id.handle)] = a
        used += sorted((p, index[h], h) for h in busy if h in index)
    return {(p, h): rank_offset + i for i, (p, _, h) in enumerate(used)}, agents


def _add_process(out: _Builder, p: int, proc: Process, ranks: dict[tuple[int, int], int],
                 agents: dict[tuple[int, int], Agent], rank_offset: int) -> None:
    symbols = {s.kernel_id: s for s in proc.kernel_symbols}
    first = min((r for (q, _), r in ranks.items() if q == p), default=rank_offset)
    gpu_index = {h: (a.logical_node_type_id if a.logical_node_type_id >= 0 else -1) for (q, h), a in agents.items() if q == p}
    rank_of_corr: dict[int, int] = {}
    for k in proc.buffer_records.kernel_dispatch:
        info = k.dispatch_info
        agent = info.agent_id.handle
        rank = ranks.get((p, agent), first)
        device = gpu_index.get(agent, -1)
        stream = k.stream_id.handle if k.stream_id is not None else info.queue_id.handle
        symbol = symbols.get(info.kernel_id)
        row = len(out.rows["ts_ns"])
        if not out.add(out.name(kernel_name(symbol, info.kernel_id)), int(Kind.KERNEL), k.start_timestamp,
                       k.end_timestamp, device, info.queue_id.handle, stream, device, k.correlation_id.internal, -1, rank):
            continue
        rank_of_corr[k.correlation_id.internal] = rank
        out.extra_rows.append(row)
        wg, grid = info.workgroup_size, info.grid_size
        values = (_workgroups(grid.x, wg.x), _workgroups(grid.y, wg.y), _workgroups(grid.z, wg.z), wg.x, wg.y, wg.z,
                  symbol.arch_vgpr_count if symbol is not None else -1, info.group_segment_size)
        for key, value in zip(EXTRA_KEYS, values, strict=True):
            out.extra[key].append(_int64(value))
    for c in proc.buffer_records.memory_copy:
        agent = c.dst_agent_id.handle if (p, c.dst_agent_id.handle) in agents else c.src_agent_id.handle
        rank = ranks.get((p, agent), first)
        device = gpu_index.get(agent, -1)
        name = _op_name(proc, c.kind, c.operation, "MEMORY_COPY")
        if out.add(out.name(name), int(Kind.MEMCPY), c.start_timestamp, c.end_timestamp, device, -1,
                   c.stream_id.handle if c.stream_id is not None else -1, device, c.correlation_id.internal, c.bytes, rank):
            rank_of_corr.setdefault(c.correlation_id.internal, rank)
    for a in proc.buffer_records.hip_api:
        corr = a.correlation_id.internal
        out.add(out.name(_op_name(proc, a.kind, a.operation, "HIP_API")), int(Kind.RUNTIME), a.start_timestamp,
                a.end_timestamp, proc.metadata.pid, a.thread_id, -1, -1, corr, -1, rank_of_corr.get(corr, first))


def _table(out: _Builder, ranks: dict[tuple[int, int], int], agents: dict[tuple[int, int], Agent],
           processes: list[Process], rank_offset: int) -> EventTable:
    n = len(out.rows["ts_ns"])
    cols = {k: np.frombuffer(v, dtype=np.int64).copy() if len(v) else np.empty(0, np.int64) for k, v in out.rows.items()}
    for key in COLUMNS:
        cols.setdefault(key, np.full(n, -1, dtype=np.int64))
    columns = narrow_columns({k: cols[k].astype(dt) if k in ("kind", "name_id") else cols[k] for k, dt in COLUMNS.items()})
    n_kernels = len(out.extra_rows)
    interner = Interner(dict.fromkeys(EXTRA_KEYS, np.int64), n_kernels)
    if n_kernels:
        interner.add([np.frombuffer(out.extra[k], dtype=np.int64) for k in EXTRA_KEYS])
    values, code = interner.result()
    rows = np.frombuffer(out.extra_rows, dtype=np.int64).astype(int_dtype_for(0, n)) if n_kernels else np.empty(0, np.int8)
    devices = tuple(f"{agents[key].product_name} ({agents[key].name}) GPU {agents[key].logical_node_type_id}"
                    for key, _ in sorted(ranks.items(), key=lambda kv: kv[1]))
    warnings: tuple[str, ...] = ()
    if len(processes) > 1:
        pids = ", ".join(str(p.metadata.pid) for p in processes)
        warnings = (f"{out.path}: {len(processes)} processes (pids {pids}): one rank per process and GPU",)
    if not ranks:
        warnings += (f"{out.path}: no kernel dispatch or memory copy on a GPU: traced without --kernel-trace "
                     "/ --memory-copy-trace?",)
    meta = TraceMeta(path=str(out.path), rank=rank_offset, world_size=len(ranks) or None, devices=devices,
                     events_read=out.read, events_kept=n, source="rocprofv3",
                     dropped=tuple(sorted(out.dropped.items())), warnings=warnings)
    return EventTable(columns, tuple(out.names), (), (meta,), values, rows, code)


def load_rocprof(path: str | Path, rank_offset: int = 0) -> EventTable:
    """One rocprofv3 JSON file (.json / .json.gz); TraceError with one line on bad input."""
    path = Path(path)
    processes = decode_rocprof(path).tool
    ranks, agents = _gpu_ranks(processes, rank_offset)
    out = _Builder(path)
    for p, proc in enumerate(processes):
        _add_process(out, p, proc, ranks, agents, rank_offset)
    return _table(out, ranks, agents, processes, rank_offset)
