"""Kineto (torch.profiler) Chrome traces -> `EventTable`.

    from analyzers.kineto import load_trace, load_traces
    table = load_trace("trace.json.gz")            # one file, rank from distributedInfo
    table = load_traces(["rank0.json", "rank1.json"])  # a multi-rank job

Events are decoded with msgspec typed structs that keep only the fields the analyses need
(ph, cat, name, pid, tid, ts, dur and from args: correlation, stream, device, External id,
bytes, Input Dims, Input type, Concrete Inputs); everything else is skipped by the decoder.
The array is read block by block (analyzers.json_stream), so memory holds one block of
decoded events at a time plus the growing columns (~90 bytes per kept event).

Timestamps are microseconds in the file, integers (torch < 2.3) or floats with nanosecond
decimals; they become int64 nanoseconds (`ts_ns`, `dur_ns`) rounded to the nearest ns.
Kept: complete events (ph X) except the profiler's own span (cat Trace) and python_function
events (Python stacks, often the bulk of a `with_stack` trace and unused by the analyses).
"""

from __future__ import annotations

import gc
import itertools
import operator
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from analyzers.event_table import (
    COLUMNS,
    GPU_WORK_KINDS,
    EventTable,
    Kind,
    TraceMeta,
    concat_tables,
)
from analyzers.json_stream import BLOCK_BYTES, StreamResult, iter_event_chunks
from analyzers.op_cost import OP_COSTS
from perfkit.core.errors import TraceError

# cat spelling (Kineto, older torch "Kernel/Runtime/Operator", ROCm) -> Kind; None = drop.
CATEGORY_KIND: dict[str, Kind | None] = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "driver": Kind.RUNTIME,
    "hip_runtime": Kind.RUNTIME,
    "hip_driver": Kind.RUNTIME,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cuda_sync": Kind.SYNC,
    "trace": None,
    "python_function": None,
}
_GPU_KINDS = np.asarray(GPU_WORK_KINDS, dtype=np.int8)
_DROP = -1

_PHASES_SKIPPED = ["B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v", "R", "c", "(", ")"]


_NO_RAW = msgspec.Raw(b"")


class _Args(msgspec.Struct, gc=False):
    correlation: int = -1
    stream: int | str = -1
    device: int = -1
    external_id: int = msgspec.field(default=-1, name="External id")
    nbytes: int = msgspec.field(default=-1, name="bytes")
    dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Concrete Inputs")


class _X(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: float = 0.0
    dur: float = 0.0
    args: _Args = msgspec.field(default_factory=_Args)


_SKIPPED: tuple[type, ...] = tuple(
    msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=ph, gc=False)
    for i, ph in enumerate(_PHASES_SKIPPED)
)
_Event: Any = _X
for _cls in _SKIPPED:
    _Event = _Event | _cls
_DECODER: Any = msgspec.json.Decoder(list[_Event])  # type: ignore[valid-type]

_get = {k: operator.attrgetter(k) for k in ("cat", "name", "pid", "tid", "ts", "dur", "args")}
_arg = {
    k: operator.attrgetter(k)
    for k in ("correlation", "stream", "device", "external_id", "nbytes", "dims", "types", "concrete")
}


class _Interner:
    """Global string table built from per-chunk factorized uniques."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}

    def codes(self, values: list[Any]) -> npt.NDArray[np.int32]:
        ids = self.ids
        for u in dict.fromkeys(values):  # first-seen order keeps ids deterministic
            if u not in ids:
                ids[u] = len(ids)
        return np.fromiter(map(ids.__getitem__, values), dtype=np.int32, count=len(values))

    def table(self) -> list[Any]:
        return list(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def _int_column(getter: Callable[[Any], Any], items: list[Any]) -> npt.NDArray[np.int64]:
    """An int field of every item; strings ("stream 7", "Spans") take the slow path."""
    try:
        return np.fromiter(map(getter, items), dtype=np.int64, count=len(items))
    except (TypeError, ValueError):
        return np.asarray([_as_int(getter(v)) for v in items], dtype=np.int64)


def _as_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(str(value).split()[-1])  # "stream 7" -> 7
    except (ValueError, IndexError):
        return -(zlib.crc32(str(value).encode()) + 2)  # a deterministic id for a named row


def _us_to_ns(us: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000.0).astype(np.int64)


class _Builder:
    def __init__(self, shapes: str) -> None:
        self.names = _Interner()
        self.args = _Interner()
        self.cat_kind: dict[str, int] = {}
        self.shapes = shapes
        self.wants_shape: list[bool] = []  # per name id: keep its shape arguments
        self.parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in COLUMNS if k != "rank"}

    def _kinds(self, xs: list[Any]) -> npt.NDArray[np.int8]:
        get = self.cat_kind.__getitem__
        try:
            return np.fromiter(map(get, map(_get["cat"], xs)), dtype=np.int8, count=len(xs))
        except KeyError:  # a category not seen yet: learn it, then the fast path again
            for cat in set(map(_get["cat"], xs)) - self.cat_kind.keys():
                kind = CATEGORY_KIND.get(str(cat).lower(), Kind.OTHER)
                self.cat_kind[cat] = _DROP if kind is None else int(kind)
            return np.fromiter(map(get, map(_get["cat"], xs)), dtype=np.int8, count=len(xs))

    def _name_codes(self, xs: list[Any]) -> npt.NDArray[np.int32]:
        codes = self.names.codes(list(map(_get["name"], xs)))
        names = self.names.table() if len(self.wants_shape) < len(self.names.ids) else []
        for name in names[len(self.wants_shape) :]:
            self.wants_shape.append(self.shapes == "all" or (self.shapes == "supported" and name in OP_COSTS))
        return codes

    def _raw_ids(self, raws: list[Any]) -> npt.NDArray[np.int32]:
        present = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)) > 0
        out = np.full(len(raws), -1, dtype=np.int32)
        if present.any():
            out[present] = self.args.codes(list(map(bytes, itertools.compress(raws, present.tolist()))))
        return out

    def _subset(self, args: list[Any], mask: npt.NDArray[np.bool_], field: str) -> npt.NDArray[np.int64]:
        """An args field (an int, or a raw JSON value's id) read only where `mask` is set; -1 elsewhere."""
        out = np.full(len(args), -1, dtype=np.int64)
        if mask.any():
            sub = list(itertools.compress(args, mask.tolist()))
            if field in ("dims", "types", "concrete"):
                out[mask] = self._raw_ids(list(map(_arg[field], sub)))
            elif field == "stream":
                out[mask] = _int_column(_arg[field], sub)
            else:
                out[mask] = np.fromiter(map(_arg[field], sub), dtype=np.int64, count=len(sub))
        return out

    def add(self, events: list[Any]) -> None:
        xs = [e for e in events if e.__class__ is _X]
        if not xs:
            return
        kind = self._kinds(xs)
        keep = kind != _DROP
        if not keep.all():
            xs = list(itertools.compress(xs, keep.tolist()))
            kind = kind[keep]
        n = len(xs)
        if n == 0:
            return
        args = list(map(_get["args"], xs))
        p = self.parts
        names = self._name_codes(xs)
        p["kind"].append(kind)
        p["name_id"].append(names)
        p["ts_ns"].append(_us_to_ns(np.fromiter(map(_get["ts"], xs), dtype=np.float64, count=n)))
        p["dur_ns"].append(np.rint(np.fromiter(map(_get["dur"], xs), dtype=np.float64, count=n) * 1000.0).astype(np.int64))
        p["pid"].append(_int_column(_get["pid"], xs))
        tid = _int_column(_get["tid"], xs)
        p["tid"].append(tid)
        gpu = np.isin(kind, _GPU_KINDS)
        on_gpu_row = gpu | (kind == Kind.GPU_ANNOTATION) | (kind == Kind.SYNC)
        stream = self._subset(args, on_gpu_row, "stream")
        p["stream"].append(np.where(gpu & (stream < 0), tid, stream))  # a GPU row without args.stream
        p["device"].append(self._subset(args, on_gpu_row, "device"))
        p["correlation"].append(np.fromiter(map(_arg["correlation"], args), dtype=np.int64, count=n))
        p["external_id"].append(np.fromiter(map(_arg["external_id"], args), dtype=np.int64, count=n))
        p["bytes"].append(self._subset(args, (kind == Kind.MEMCPY) | (kind == Kind.MEMSET), "nbytes"))
        # shapes: CPU ops whose cost the analyses compute (all CPU ops with shapes="all")
        want = (kind == Kind.CPU_OP) & np.asarray(self.wants_shape, dtype=bool)[names]
        p["dims_id"].append(self._subset(args, want, "dims"))
        p["types_id"].append(self._subset(args, want, "types"))
        p["concrete_id"].append(self._subset(args, want, "concrete"))

    def table(self, meta: TraceMeta) -> EventTable:
        cols: dict[str, npt.NDArray[Any]] = {}
        for k, dt in COLUMNS.items():
            if k == "rank":
                continue
            parts = self.parts[k]
            cols[k] = np.concatenate(parts).astype(dt, copy=False) if parts else np.empty(0, dtype=dt)
            parts.clear()  # release chunk arrays as we go
        cols["rank"] = np.full(len(cols["ts_ns"]), meta.rank, dtype=np.int32)
        texts = tuple(b.decode("utf-8", "replace") for b in self.args.table())
        names = tuple(str(s) for s in self.names.table())
        return EventTable(cols, names, texts, (replace(meta, events_kept=len(cols["ts_ns"])),))


def _decode_chunk(buf: memoryview) -> list[Any]:
    result: list[Any] = _DECODER.decode(buf)
    return result


def _meta_from(path: Path, info: dict[str, Any], rank: int | None, events_read: int) -> TraceMeta:
    dist = info.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    file_rank = dist.get("rank")
    devices = tuple(
        str(d.get("name", "")) for d in (info.get("deviceProperties") or []) if isinstance(d, dict)
    )
    base = info.get("baseTimeNanoseconds")
    world = dist.get("world_size")
    return TraceMeta(
        path=str(path),
        rank=rank if rank is not None else (int(file_rank) if isinstance(file_rank, int) else 0),
        world_size=int(world) if isinstance(world, int) else None,
        backend=str(dist["backend"]) if isinstance(dist.get("backend"), str) else None,
        devices=devices,
        base_time_ns=int(base) if isinstance(base, int) else None,
        events_read=events_read,
        rank_in_file=int(file_rank) if isinstance(file_rank, int) else None,
    )


def load_trace(
    path: str | Path, rank: int | None = None, block_bytes: int = BLOCK_BYTES, shapes: str = "supported"
) -> EventTable:
    """Load one Kineto trace (.json or .json.gz). `rank` overrides distributedInfo.rank.

    `shapes`: whose `Input Dims` / `Input type` / `Concrete Inputs` to keep: "supported" (the
    CPU ops in analyzers.op_cost.OP_COSTS, what the analyses use), "all" CPU ops, or "none".
    `block_bytes` is how much JSON is decoded at a time (memory vs. per-block overhead).
    """
    if shapes not in ("supported", "all", "none"):
        raise ValueError(f"shapes must be 'supported', 'all' or 'none', not {shapes!r}")
    path = Path(path)
    result: StreamResult[Any] = StreamResult()
    builder = _Builder(shapes)
    was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived structs: the cyclic collector only costs time here
    try:
        for events in iter_event_chunks(path, _decode_chunk, result, block_bytes):
            builder.add(events)
            del events
    finally:
        if was_enabled:
            gc.enable()
    info = {**result.trailer, **result.header}
    return builder.table(_meta_from(path, info, rank, result.events_read))


def load_traces(paths: Sequence[str | Path]) -> EventTable:
    """Load the rank files of one job into one table (column `rank`).

    Ranks come from each file's distributedInfo; files without one take their position in
    `paths`. Two files claiming the same rank are an error (compare runs with `--vs` instead).
    """
    if not paths:
        raise TraceError("no trace files given; pass one .json / .json.gz per rank")
    tables = [load_trace(p) for p in paths]
    if len(tables) == 1:
        return tables[0]
    named = [t.meta[0] for t in tables]
    if all(m.rank_in_file is None for m in named):
        tables = [t.with_rank(i) for i, t in enumerate(tables)]
    else:
        seen: dict[int, str] = {}
        for m in named:
            if m.rank in seen:
                raise TraceError(
                    f"{m.path}: rank {m.rank} is also the rank of {seen[m.rank]}; give one file per "
                    "rank (use --vs to compare two runs)"
                )
            seen[m.rank] = m.path
    return concat_tables(tables)
