"""The rules shared by the XLA loaders (xplane and JSON): one event in, one table row out.

`TableBuilder.device_event` and `host_event` take an event already read (name, start and
duration in integer picoseconds, its stats by key) and apply the rules documented in
analyzers.loaders.xla.xplane; `table()` makes the EventTable with the GPU rows' launch
configuration and HLO op / module in `extra`.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.event_table import (
    COLUMNS,
    GPU_WORK_KINDS,
    EventTable,
    Kind,
    TraceMeta,
    int_dtype_for,
    narrow_columns,
)
from perfkit.analyzers.loaders.xla.details import KERNEL_DETAIL_KEYS, kernel_config, memcpy_bytes
from perfkit.analyzers.row_codes import Interner

DEVICE_PLANE = re.compile(r"^/device:GPU:(\d+)$")
MAX_DEVICE = (1 << 31) - 1  # a device ordinal above int32 is no device (a plane named so is not read)
HOST_PLANE = "/host:CPU"
STREAM_LINE = re.compile(r"^Stream #(\d+)")
TIME_LIMIT_NS = 1 << 62  # |start|, |end| below this: the difference of any two times fits in int64
INT64 = 1 << 63
HOST_PID = 1 << 20  # pid of host rows (GPU rows have their device as pid, like Kineto's)
# stat name in the trace -> key the rules read
DEVICE_STATS = {"correlation_id": "correlation", "hlo_op": "hlo_op", "hlo_module": "hlo_module",
                "kernel_details": "kernel_details", "memcpy_details": "memcpy_details"}
HOST_STATS = {"correlation_id": "correlation", "device_id": "device", "step_num": "step"}
HLO_EXTRA = ("hlo_op_name_id", "hlo_module_name_id")
EXTRA_KEYS = (*KERNEL_DETAIL_KEYS, *HLO_EXTRA)
_ROW = ("name_id", "kind", "ts_ns", "dur_ns", "pid", "tid", "stream", "device", "correlation", "bytes", "rank")


def ps_to_ns(ps: int) -> int:
    """Picoseconds to nanoseconds, rounded half to even (exact integers)."""
    q, r = divmod(ps, 1000)
    return q + (r > 500 or (r == 500 and q % 2 == 1))


def device_number(plane: str) -> int | None:
    """N of a "/device:GPU:N" plane (N up to 2^31 - 1), None for any other plane."""
    m = DEVICE_PLANE.match(plane)
    return int(m.group(1)) if m and len(m.group(1)) <= 10 and int(m.group(1)) <= MAX_DEVICE else None


def int64(value: int) -> int:
    """`value` when it fits a signed 64-bit column, else -1 (unknown)."""
    return value if -INT64 <= value < INT64 else -1


def int_stat(value: object) -> int:
    """A stat read as an integer (int, integral float or decimal text) that fits 64 bits; -1 otherwise."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return int64(value)
    if isinstance(value, float) and value.is_integer():
        return int64(int(value))
    if isinstance(value, str) and 0 < len(value) <= 40 and value.strip().lstrip("-").isdigit():
        return int64(int(value))
    return -1


def _device_kind(line_name: str, name: str, stats: Mapping[str, object]) -> Kind:
    if "memset" in name.lower() or "memset" in line_name.lower():
        return Kind.MEMSET
    if "memcpy_details" in stats or "memcpy" in line_name.lower():
        return Kind.MEMCPY
    return Kind.KERNEL


@dataclass
class TableBuilder:
    path: str
    source: str
    names: dict[str, int] = field(default_factory=dict)
    rows: dict[str, array[int]] = field(default_factory=lambda: {k: array("q") for k in _ROW})
    extra: dict[str, array[int]] = field(default_factory=lambda: {k: array("q") for k in EXTRA_KEYS})
    extra_rows: array[int] = field(default_factory=lambda: array("q"))
    dropped: dict[str, int] = field(default_factory=dict)
    devices: set[int] = field(default_factory=set)
    read: int = 0

    def name(self, text: str) -> int:
        return self.names.setdefault(text, len(self.names))

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n

    def _add(self, name_id: int, kind: Kind, start_ps: int, dur_ps: int, pid: int, tid: int, stream: int,
             device: int, corr: int, nbytes: int, rank: int) -> bool:
        """One row; False (left out and counted) when its times are damaged."""
        if dur_ps < 0:
            self.drop("negative duration")
            return False
        ts = ps_to_ns(start_ps)
        end = ps_to_ns(start_ps + dur_ps)
        if not (-TIME_LIMIT_NS < ts < TIME_LIMIT_NS and end < TIME_LIMIT_NS):
            self.drop("start or end beyond 2^62 ns (146 years)")
            return False
        dur = end - ts if dur_ps else 0
        for key, value in zip(_ROW, (name_id, int(kind), ts, dur, pid, tid, stream, device, corr, nbytes, rank), strict=True):
            self.rows[key].append(value)
        return True

    def device_event(self, device: int, rank: int, line_name: str, name: str, start_ps: int, dur_ps: int,
                     stats: Mapping[str, object]) -> None:
        """A GPU op on a "Stream #S" line of device `device` (the caller checked the line)."""
        m = STREAM_LINE.match(line_name)
        stream = int_stat(m.group(1)) if m else -1
        kind = _device_kind(line_name, name, stats)
        nbytes = int64(memcpy_bytes(stats.get("memcpy_details"))) if kind != Kind.KERNEL else -1
        row = len(self.rows["ts_ns"])
        if not self._add(self.name(name), kind, start_ps, dur_ps, device, stream, stream, device,
                         int_stat(stats.get("correlation")), nbytes, rank):
            return
        self.extra_rows.append(row)
        hlo_op, module = stats.get("hlo_op"), stats.get("hlo_module")
        values = (*map(int64, kernel_config(stats.get("kernel_details"))),
                  self.name(str(hlo_op)) if hlo_op not in (None, "") else -1,
                  self.name(str(module)) if module not in (None, "") else -1)
        for key, value in zip(EXTRA_KEYS, values, strict=True):
            self.extra[key].append(value)
        self.devices.add(device)

    def host_event(self, ranks: Mapping[int, int], tid: int, name: str, start_ps: int, dur_ps: int,
                   stats: Mapping[str, object]) -> None:
        """A host event: runtime call, step, CPU op, or left out (a Python function)."""
        if name.startswith("$"):
            self.drop("python function")
            return
        first = min(ranks.values(), default=0)
        step = int_stat(stats.get("step"))
        if step >= 0:
            step_id = self.name(f"ProfilerStep#{step}")
            for r in sorted(set(ranks.values())) or [first]:
                self._add(step_id, Kind.USER_ANNOTATION, start_ps, dur_ps, HOST_PID, tid, -1, -1, -1, -1, r)
            return
        corr = int_stat(stats.get("correlation"))
        rank = ranks.get(int_stat(stats.get("device")), first)
        self._add(self.name(name), Kind.RUNTIME if corr > 0 else Kind.CPU_OP, start_ps, dur_ps, HOST_PID, tid,
                  -1, -1, corr, -1, rank)

    def table(self, warnings: tuple[str, ...] = (), rank: int = 0) -> EventTable:
        n = len(self.rows["ts_ns"])
        cols = {k: np.frombuffer(v, dtype=np.int64).copy() if len(v) else np.empty(0, np.int64) for k, v in self.rows.items()}
        for key in COLUMNS:
            cols.setdefault(key, np.full(n, -1, dtype=np.int64))
        _rank_by_correlation(cols)
        columns = narrow_columns({k: cols[k].astype(dt) if k in ("kind", "name_id") else cols[k] for k, dt in COLUMNS.items()})
        n_gpu = len(self.extra_rows)
        interner = Interner({k: np.int64 for k in EXTRA_KEYS}, n_gpu)
        if n_gpu:
            interner.add([np.frombuffer(self.extra[k], dtype=np.int64) for k in EXTRA_KEYS])
        values, code = interner.result()
        rows: npt.NDArray[Any] = np.frombuffer(self.extra_rows, dtype=np.int64).astype(int_dtype_for(0, n)) if n_gpu \
            else np.empty(0, dtype=np.int8)
        if not self.devices:
            warnings = (f"{self.path}: no device events (no /device:GPU:N events): recorded on CPU or without "
                        "a GPU tracer; host events only", *warnings)
        meta = TraceMeta(path=self.path, rank=rank, world_size=len(self.devices) or None,
                         devices=tuple(f"/device:GPU:{d}" for d in sorted(self.devices)), events_read=self.read,
                         events_kept=n, source=self.source, dropped=tuple(sorted(self.dropped.items())),
                         warnings=warnings)
        return EventTable(columns, tuple(self.names), (), (meta,), values, rows, code)


def _rank_by_correlation(cols: dict[str, npt.NDArray[Any]]) -> None:
    """A runtime call takes the rank of the GPU op with its correlation id (ids are unique per
    process; the call's `device_id` is a driver id on ROCm, not the device ordinal)."""
    gpu = np.flatnonzero(np.isin(cols["kind"], [int(k) for k in GPU_WORK_KINDS]) & (cols["correlation"] > 0))
    calls = np.flatnonzero((cols["kind"] == int(Kind.RUNTIME)) & (cols["correlation"] > 0))
    if len(gpu) == 0 or len(calls) == 0:
        return
    order = np.argsort(cols["correlation"][gpu], kind="stable")
    keys = cols["correlation"][gpu][order]
    pos = np.minimum(np.searchsorted(keys, cols["correlation"][calls]), len(keys) - 1)
    found = keys[pos] == cols["correlation"][calls]
    cols["rank"][calls[found]] = cols["rank"][gpu[order[pos[found]]]]


def hlo_names(table: EventTable, rows: npt.NDArray[Any]) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.object_]]:
    """(HLO op, HLO module) of each of `rows` ("" where a row has none, or in a table of another source)."""
    if not all(k in table.extra for k in HLO_EXTRA):
        return np.full(len(rows), "", dtype=object), np.full(len(rows), "", dtype=object)
    ids = table.extras_at(HLO_EXTRA, rows)
    names = np.asarray((*table.names, ""), dtype=object)
    return names[ids[HLO_EXTRA[0]]], names[ids[HLO_EXTRA[1]]]
