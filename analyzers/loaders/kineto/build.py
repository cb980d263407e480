"""Kineto events -> the columns of an `EventTable`, block by block.

Part of the Kineto loader (analyzers.loaders.kineto.load). `Builder.add` takes one decoded block: its X
events (analyzers.loaders.kineto.columns.Rows) get a Kind from their cat (CATEGORY_KIND; Trace and
python_function events are dropped, an unknown cat is Kind.OTHER and counted), their fields are
read into checked columns (ColumnReader), names and raw shape arguments become ids into string
tables (`Interner`), and args.stream / device / bytes / shapes are read only on the rows that use
them. Rows whose times cannot be used are left out. `Builder.table` joins the blocks' columns.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
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
from perfkit.analyzers.loaders.kineto.columns import ARG, GET, ColumnReader, Rows
from perfkit.analyzers.loaders.kineto.decode import COMM_ARGS
from perfkit.analyzers.loaders.kineto.fields import Notes
from perfkit.analyzers.op_cost import OP_COSTS
from perfkit.analyzers.steps.profiler_steps import STEP_RE

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
COMM_OP = "record_param_comms"  # c10d's CPU op holding a collective's args (NCCL, some gloo)
GLOO_PREFIX = "gloo:"  # gloo's annotation of the collective it runs (Input Dims / Input type)
_COMM_FIELDS = (*COMM_ARGS.items(), ("dims", "Input Dims"), ("types", "Input type"))
_DROP = -1


def _comm_json(args: Any) -> bytes:
    """A collective's args (raw JSON values) as one JSON object, keyed by Kineto's names."""
    parts = [b'"%s":%s' % (key.encode(), bytes(ARG[f](args))) for f, key in _COMM_FIELDS if len(ARG[f](args))]
    return b"{" + b",".join(parts) + b"}"


class Interner:
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


class Builder:
    """The columns of one file's EventTable, appended block by block."""

    def __init__(self, shapes: str, notes: Notes) -> None:
        self.names = Interner()
        self.args = Interner()
        self.cat_kind: dict[str, int] = {}
        self.shapes = shapes
        self.notes = notes
        self.read = ColumnReader(notes)
        self.wants_shape: list[bool] = []  # per name id: keep its shape arguments
        self.comm_kind: list[int] = []  # per name id: the Kind whose rows of that name are collectives, -1 none
        self.is_step: list[bool] = []  # per name id: spelled ProfilerStep#N
        self.parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in COLUMNS if k != "rank"}

    def _kinds(self, cats: list[str]) -> npt.NDArray[np.int8]:
        get = self.cat_kind.__getitem__
        try:
            kind = np.fromiter(map(get, cats), dtype=np.int8, count=len(cats))
        except KeyError:  # a category not seen yet: learn it, then the fast path again
            for cat in set(cats) - self.cat_kind.keys():
                known = CATEGORY_KIND.get(cat.lower(), Kind.OTHER)
                self.cat_kind[cat] = _DROP if known is None else int(known)
            kind = np.fromiter(map(get, cats), dtype=np.int8, count=len(cats))
        other = kind == Kind.OTHER
        if other.any():
            self.notes.unknown.update(c or "(none)" for c in itertools.compress(cats, other.tolist()))
        return kind

    def _name_codes(self, names: list[str]) -> npt.NDArray[np.int32]:
        codes = self.names.codes(names)
        table = self.names.table() if len(self.wants_shape) < len(self.names.ids) else []
        for name in table[len(self.wants_shape) :]:
            self.wants_shape.append(self.shapes == "all" or (self.shapes == "supported" and name in OP_COSTS))
            gloo = isinstance(name, str) and name.startswith(GLOO_PREFIX)
            self.comm_kind.append(int(Kind.CPU_OP) if name == COMM_OP else int(Kind.USER_ANNOTATION) if gloo else -1)
            self.is_step.append(isinstance(name, str) and STEP_RE.match(name) is not None)
        return codes

    def _raw_ids(self, raws: list[Any]) -> npt.NDArray[np.int32]:
        present = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws)) > 0
        out = np.full(len(raws), -1, dtype=np.int32)
        if present.any():
            out[present] = self.args.codes(list(map(bytes, itertools.compress(raws, present.tolist()))))
        return out

    def _subset(self, args: list[Any], mask: npt.NDArray[np.bool_], field: str, rows: Rows, names: list[str]) -> npt.NDArray[np.int64]:
        """An args field (an int, or a raw JSON value's id) read only where `mask` is set; -1 elsewhere."""
        out = np.full(len(args), -1, dtype=np.int64)
        if mask.any():
            sub = list(itertools.compress(args, mask.tolist()))
            if field in ("dims", "types", "concrete"):
                out[mask] = self._raw_ids(list(map(ARG[field], sub)))
            else:
                out[mask] = self.read.ints(sub, ARG[field], field, rows, np.flatnonzero(mask), names)
        return out

    def add(self, events: list[Any], base: int) -> None:
        """Append the kept X events of one decoded block (traceEvents[base:base + len(events)])."""
        rows = Rows(events, base, self.notes)
        xs = rows.xs
        if not xs:
            return
        cats = list(map(GET["cat"], xs))
        names = list(map(GET["name"], xs))
        if rows.loose:
            names = self.read.texts(names, "name", rows, names)
            cats = self.read.texts(cats, "cat", rows, names)
        kind = self._kinds(cats)
        keep = kind != _DROP
        if not keep.all():
            rows.keep = np.flatnonzero(keep)
            xs = list(itertools.compress(xs, keep.tolist()))
            names = list(itertools.compress(names, keep.tolist()))
            kind = kind[keep]
        if not xs:
            return
        ts, dur, valid = self.read.times(xs, rows, names)
        args = self.read.args(xs, rows, names)
        every = np.arange(len(xs))
        cols: dict[str, npt.NDArray[Any]] = {"kind": kind, "ts_ns": ts, "dur_ns": dur}
        codes = self._name_codes(names)
        cols["name_id"] = codes
        # torch <= 1.9 records ProfilerStep#N as an "Operator": a step all the same. Only a CPU op:
        # the GPU-side projection newer torch writes (gpu_user_annotation) stays GPU_ANNOTATION
        step = np.asarray(self.is_step, dtype=bool)[codes] & (kind == Kind.CPU_OP)
        if step.any():
            kind = np.where(step, np.int8(Kind.USER_ANNOTATION), kind)
            cols["kind"] = kind
        cols["pid"] = self.read.ints(xs, GET["pid"], "pid", rows, every, names)
        tid = self.read.ints(xs, GET["tid"], "tid", rows, every, names)
        cols["tid"] = tid
        gpu = np.isin(kind, _GPU_KINDS)
        on_gpu_row = gpu | (kind == Kind.GPU_ANNOTATION) | (kind == Kind.SYNC)
        stream = self._subset(args, on_gpu_row, "stream", rows, names)
        cols["stream"] = np.where(gpu & (stream < 0), tid, stream)  # a GPU row without args.stream
        cols["device"] = self._subset(args, on_gpu_row, "device", rows, names)
        cols["correlation"] = self.read.ints(args, ARG["correlation"], "correlation", rows, every, names)
        cols["external_id"] = self.read.ints(args, ARG["external_id"], "external_id", rows, every, names)
        cols["bytes"] = self._subset(args, (kind == Kind.MEMCPY) | (kind == Kind.MEMSET), "nbytes", rows, names)
        # shapes: CPU ops whose cost the analyses compute (all CPU ops with shapes="all")
        want = (kind == Kind.CPU_OP) & np.asarray(self.wants_shape, dtype=bool)[codes]
        for col, field in (("dims_id", "dims"), ("types_id", "types"), ("concrete_id", "concrete")):
            cols[col] = self._subset(args, want, field, rows, names)
        comm = kind == np.asarray(self.comm_kind, dtype=np.int8)[codes]
        cols["comm_id"] = np.full(len(xs), -1, dtype=np.int64)
        if comm.any():  # the few collective rows only: their args as one JSON object
            cols["comm_id"][comm] = self._raw_ids([_comm_json(a) for a in itertools.compress(args, comm.tolist())])
        every_valid = bool(valid.all())
        for k, v in cols.items():
            self.parts[k].append(v if every_valid else v[valid])

    def table(self, meta: TraceMeta) -> EventTable:
        cols: dict[str, npt.NDArray[Any]] = {}
        for k, dt in COLUMNS.items():
            if k == "rank":
                continue
            parts = self.parts[k]
            cols[k] = np.concatenate(parts).astype(dt, copy=False) if parts else np.empty(0, dtype=dt)
            parts.clear()  # release chunk arrays as we go
        cols["rank"] = np.full(len(cols["ts_ns"]), meta.rank, dtype=int_dtype_for(meta.rank, meta.rank))
        narrow_columns(cols)
        texts = tuple(b.decode("utf-8", "replace") for b in self.args.table())
        names = tuple(str(s) for s in self.names.table())
        return EventTable(cols, names, texts, (replace(meta, events_kept=len(cols["ts_ns"])),))
