"""Time in each collective, by rank, collective, dtype and message size.

Sources, per rank (`source` says which gave a row):
- c10d's `record_param_comms` CPU ops (NCCL traces, torch 2.2 on; source "args"): their args
  name the collective ("Collective name"), the elements in / out ("In msg nelems", "Out msg
  nelems"), the "dtype" and the "Group size". Timed by the GPU kernels carrying the op's
  External id (the NCCL kernel; `timed_on` = "gpu"); an op without one (a `wait`, a CPU
  backend) is timed by its own CPU duration (`timed_on` = "cpu"). An op whose args name no
  collective (torch 2.0 / 2.1 record the op without them) gives no row: its kernels do.
- communication kernels no such op claimed (source "kernel"): every NCCL / RCCL / MSCCL kernel
  (and custom all-reduce kernels) of a trace whose ops carry no args, and every one of an Nsight
  Systems export. One call per kernel, named and typed from the kernel name
  (perfkit.analyzers.collectives.kernels), timed by the kernel (`timed_on` = "gpu"); the name
  says nothing of the message, so message_bytes and algbw are empty (unsized), and group_size
  is the trace's world size where it names one.
- else gloo's `gloo:<collective>` annotations (torch's gloo backend records no
  record_param_comms): the annotation spans the collective on gloo's thread, its Input Dims /
  Input type give the message; the group is the trace's world size; `timed_on` = "cpu". The
  name is what gloo ran (a reduce_scatter runs as gloo:all_reduce over the whole input).
message_bytes is nccl-tests' S: the larger of input and output (all_gather: the whole output).
algbw = message_bytes / p50 time; message_bytes is empty (NA, never 0) where the trace does
not say it. Rows with rank -1 pool every rank.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from perfkit.analyzers.categories import category_of
from perfkit.analyzers.collectives.kernels import collective_of
from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.analyzers.collectives.ranges import enclosing_collective_ranges
from perfkit.analyzers.event_table import EventTable, Kind, member

COLLECTIVE_COLUMNS = [
    "rank", "collective", "dtype", "message_bytes", "group_size", "timed_on", "source",
    "count", "total_ns", "mean_ns", "p50_ns", "algbw_bytes_per_s",
]  # fmt: skip
ALL_RANKS = -1
_BYTES = {  # Kineto's dtype spellings (record_param_comms; gloo's Input type) -> (label, bytes)
    "float": ("fp32", 4), "double": ("fp64", 8), "half": ("fp16", 2), "bfloat16": ("bf16", 2),
    "c10::half": ("fp16", 2), "c10::bfloat16": ("bf16", 2), "long": ("int64", 8), "long int": ("int64", 8),
    "int": ("int32", 4), "short": ("int16", 2), "short int": ("int16", 2), "char": ("int8", 1),
    "signed char": ("int8", 1), "byte": ("uint8", 1), "unsigned char": ("uint8", 1), "bool": ("bool", 1),
    "float8_e4m3fn": ("fp8_e4m3", 1), "float8_e5m2": ("fp8_e5m2", 1), "c10::float8_e4m3fn": ("fp8_e4m3", 1),
}  # fmt: skip


def _numel(dims: Any) -> int:
    return math.prod(int(d) for d in dims) if isinstance(dims, list) else 0


def _message(args: dict[str, Any], gloo_name: str | None, world_size: int | None) -> tuple[str, str, int | None, int | None]:
    """(collective, dtype label, message bytes, group size) of one collective's args; bytes and
    group size None where the args do not say them."""
    if gloo_name is None:
        label, size = _BYTES.get(str(args.get("dtype", "")).lower(), (str(args.get("dtype", "")), 0))
        counts = [int(args[k] or 0) for k in ("In msg nelems", "Out msg nelems") if k in args]
        nbytes = max(counts) * size if counts and size and max(counts) > 0 else None  # a wait moves nothing
        group = int(args["Group size"] or 0) if "Group size" in args else None
        return canonical_collective(str(args.get("Collective name", ""))), label, nbytes, group
    types = args.get("Input type") or [""]
    dims = args.get("Input Dims") or [[]]
    label, size = _BYTES.get(str(types[0]).lower(), (str(types[0]), 0))
    group = world_size or 1
    nbytes = _numel(dims[0]) * size * (group if gloo_name == "all_gather" else 1)
    return canonical_collective(gloo_name), label, nbytes, group


CALL_COLUMNS = ["rank", "collective", "dtype", "message_bytes", "group_size", "timed_on", "source", "time_ns"]


def collective_calls(table: EventTable) -> pd.DataFrame:
    """One row per collective call: rank, collective, dtype, message_bytes, group_size, timed_on,
    source, time_ns (message_bytes and group_size nullable)."""
    comm = table["comm_id"] >= 0 if len(table) else np.zeros(0, dtype=bool)
    calls, claimed = _calls_from_args(table, comm) if comm.any() else ([], set())
    calls += _calls_from_kernels(table, claimed)
    columns = list(zip(*calls, strict=True)) if calls else [()] * len(CALL_COLUMNS)
    nullable = ("message_bytes", "group_size")
    return pd.DataFrame({c: pd.array(list(v), dtype="Int64") if c in nullable else list(v)
                         for c, v in zip(CALL_COLUMNS, columns, strict=True)})


def _comm_name_ids(table: EventTable) -> dict[int, tuple[str, str]]:
    """{name id: (collective, dtype)} of the names the categories call communication."""
    out = {}
    for i, name in enumerate(table.names):
        if category_of(name) == "communication":
            coll, dtype = collective_of(name)
            out[i] = (coll or "other", dtype)
    return out


def _world_sizes(table: EventTable) -> dict[int, int | None]:
    """{rank: world size} of each rank (one file holding every rank, as an nsys export: its size)."""
    sizes = {m.world_size for m in table.meta if m.world_size}
    only = sizes.pop() if len(sizes) == 1 else None
    named = {m.rank: m.world_size for m in table.meta}
    return {r: named.get(r) or only for r in table.ranks}


def _calls_from_kernels(table: EventTable, claimed: set[tuple[int, int]]) -> list[tuple[Any, ...]]:
    """One call per communication kernel whose (rank, External id) no collective op claimed."""
    ids = _comm_name_ids(table)
    if not ids or not len(table):
        return []
    rows = np.flatnonzero((table["kind"] == Kind.KERNEL) & member(table["name_id"], list(ids)))
    unclaimed = [i for i, (r, ext) in enumerate(zip(table["rank"][rows].tolist(), table["external_id"][rows].tolist(),
                                                    strict=True)) if not (ext > 0 and (r, ext) in claimed)]  # fmt: skip
    rows = rows[unclaimed]
    in_range, range_names = enclosing_collective_ranges(table, rows)
    world = _world_sizes(table)
    by_range: dict[int, list[Any]] = {}  # one call per nccl: range instance, its kernels' time summed
    out = []
    for r, nid, dur, rng, named in zip(table["rank"][rows].tolist(), table["name_id"][rows].tolist(),
                                       table["dur_ns"][rows].tolist(), in_range.tolist(), range_names, strict=True):  # fmt: skip
        coll, dtype = ids[nid]
        if rng >= 0 and named:
            call = by_range.get(rng)
            if call is None:  # a kernel of another shape (send_recv under all_reduce): its byte type is not the data's
                kept = dtype if named == coll else ""
                by_range[rng] = [r, named, kept, None, world.get(r), "gpu", "nvtx", int(dur)]
            else:
                call[7] += int(dur)
            continue
        out.append((r, coll, dtype, None, world.get(r), "gpu", "kernel", int(dur)))
    return out + [tuple(c) for c in by_range.values()]


def _calls_from_args(table: EventTable, comm: np.ndarray) -> tuple[list[tuple[Any, ...]], set[tuple[int, int]]]:
    """Calls of the collective ops with args, and the (rank, External id) of the kernels they claim."""
    cpu_op = comm & (table["kind"] == Kind.CPU_OP)
    rank = table["rank"]
    ranks_with_ops = set(np.unique(rank[cpu_op]).tolist())
    gloo = comm & (table["kind"] == Kind.USER_ANNOTATION) & ~member(rank, sorted(ranks_with_ops))
    rows = np.flatnonzero(cpu_op | gloo)
    kernels = np.flatnonzero(table.mask_kind(Kind.KERNEL) & (table["external_id"] > 0))
    gpu_ns: dict[tuple[int, int], int] = {}
    for r, ext, dur in zip(rank[kernels].tolist(), table["external_id"][kernels].tolist(),
                           table["dur_ns"][kernels].tolist(), strict=True):  # fmt: skip
        gpu_ns[(r, ext)] = gpu_ns.get((r, ext), 0) + dur
    world = {m.rank: m.world_size for m in table.meta}
    parsed: dict[int, dict[str, Any]] = {}
    out = []
    claimed: set[tuple[int, int]] = set()
    for row in rows.tolist():
        cid = int(table["comm_id"][row])
        args = parsed.setdefault(cid, json.loads(table.args_text[cid]))
        r = int(rank[row])
        name = table.names[table["name_id"][row]]
        gloo_name = name.removeprefix("gloo:") if table["kind"][row] == Kind.USER_ANNOTATION else None
        coll, dtype, nbytes, group = _message(args, gloo_name, world.get(r))
        if not coll:  # torch 2.0 / 2.1: an op without its args; its kernels make the rows
            continue
        key = (r, int(table["external_id"][row]))
        on_gpu = gloo_name is None and key in gpu_ns
        if on_gpu:
            claimed.add(key)
        t = gpu_ns[key] if on_gpu else int(table["dur_ns"][row])
        out.append((r, coll, dtype, nbytes, group, "gpu" if on_gpu else "cpu", "gloo" if gloo_name else "args", t))
    return out, claimed


def collective_summary(table: EventTable) -> pd.DataFrame:
    """Per rank (and pooled, rank -1), per collective / dtype / size: count, total / mean / p50, algbw."""
    calls = collective_calls(table)
    if calls.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in COLLECTIVE_COLUMNS})
    keys = ["collective", "dtype", "message_bytes", "group_size", "timed_on", "source"]
    pooled = calls.assign(rank=ALL_RANKS) if calls["rank"].nunique() > 1 else calls.iloc[0:0]
    g = pd.concat([calls, pooled]).groupby(["rank", *keys], sort=True, dropna=False)["time_ns"].agg(
        count="size", total_ns="sum", mean_ns="mean", p50_ns="median"
    ).reset_index()
    p50_s = g["p50_ns"].where(g["p50_ns"] > 0) * 1e-9
    sized = g["message_bytes"].astype("float64")
    # a bandwidth needs the transfer's time: the kernel's, or gloo's own (it runs on the CPU); an
    # NCCL op timed on the host (its kernels not in the trace) measured only the enqueue
    transfer_timed = (g["timed_on"] == "gpu") | (g["source"] == "gloo")
    g["algbw_bytes_per_s"] = (sized.where((sized > 0) & transfer_timed) / p50_s).astype("float64")
    order = np.lexsort((sized.fillna(-1.0), g["collective"], g["rank"].where(g["rank"] >= 0, np.iinfo(np.int64).max)))
    return g.iloc[order][COLLECTIVE_COLUMNS].reset_index(drop=True)
