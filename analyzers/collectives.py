"""Time in each collective, by rank, collective, dtype and message size.

Sources, per rank:
- c10d's `record_param_comms` CPU ops (NCCL traces): their args name the collective, the
  elements in / out, the dtype and the group size. Timed by the GPU kernels carrying the op's
  External id (the NCCL kernel; `timed_on` = "gpu"); an op without one (a `wait`, a CPU
  backend) is timed by its own CPU duration (`timed_on` = "cpu").
- else gloo's `gloo:<collective>` annotations (torch's gloo backend records no
  record_param_comms): the annotation spans the collective on gloo's thread, its Input Dims /
  Input type give the message; the group is the trace's world size; `timed_on` = "cpu". The
  name is what gloo ran (a reduce_scatter runs as gloo:all_reduce over the whole input).
message_bytes is nccl-tests' S: the larger of input and output (all_gather: the whole output).
algbw = message_bytes / p50 time. Rows with rank -1 pool every rank.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind, member

COLLECTIVE_COLUMNS = [
    "rank", "collective", "dtype", "message_bytes", "group_size", "timed_on",
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


def _message(args: dict[str, Any], gloo_name: str | None, world_size: int | None) -> tuple[str, str, int, int]:
    """(collective, dtype label, message bytes, group size) of one collective's args."""
    if gloo_name is None:
        label, size = _BYTES.get(str(args.get("dtype", "")).lower(), (str(args.get("dtype", "")), 0))
        nelems = max(int(args.get("In msg nelems", 0) or 0), int(args.get("Out msg nelems", 0) or 0))
        return str(args.get("Collective name", "")), label, nelems * size, int(args.get("Group size", 0) or 0)
    types = args.get("Input type") or [""]
    dims = args.get("Input Dims") or [[]]
    label, size = _BYTES.get(str(types[0]).lower(), (str(types[0]), 0))
    group = world_size or 1
    nbytes = _numel(dims[0]) * size * (group if gloo_name == "all_gather" else 1)
    return gloo_name, label, nbytes, group


CALL_COLUMNS = ["rank", "collective", "dtype", "message_bytes", "group_size", "timed_on", "time_ns"]


def collective_calls(table: EventTable) -> pd.DataFrame:
    """One row per collective call: rank, collective, dtype, message_bytes, group_size, timed_on, time_ns."""
    comm = table["comm_id"] >= 0 if len(table) else np.zeros(0, dtype=bool)
    if not comm.any():  # no collective's args in the trace (an nsys export): no table-wide masks
        return pd.DataFrame(columns=CALL_COLUMNS)
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
    for row in rows.tolist():
        cid = int(table["comm_id"][row])
        args = parsed.setdefault(cid, json.loads(table.args_text[cid]))
        r = int(rank[row])
        name = table.names[table["name_id"][row]]
        gloo_name = name.removeprefix("gloo:") if table["kind"][row] == Kind.USER_ANNOTATION else None
        coll, dtype, nbytes, group = _message(args, gloo_name, world.get(r))
        on_gpu = gloo_name is None and (r, int(table["external_id"][row])) in gpu_ns
        t = gpu_ns[(r, int(table["external_id"][row]))] if on_gpu else int(table["dur_ns"][row])
        out.append((r, coll, dtype, nbytes, group, "gpu" if on_gpu else "cpu", t))
    return pd.DataFrame(out, columns=CALL_COLUMNS)


def collective_summary(table: EventTable) -> pd.DataFrame:
    """Per rank (and pooled, rank -1), per collective / dtype / size: count, total / mean / p50, algbw."""
    calls = collective_calls(table)
    if calls.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in COLLECTIVE_COLUMNS})
    keys = ["collective", "dtype", "message_bytes", "group_size", "timed_on"]
    pooled = calls.assign(rank=ALL_RANKS) if calls["rank"].nunique() > 1 else calls.iloc[0:0]
    g = pd.concat([calls, pooled]).groupby(["rank", *keys], sort=True)["time_ns"].agg(
        count="size", total_ns="sum", mean_ns="mean", p50_ns="median"
    ).reset_index()
    p50_s = g["p50_ns"].where(g["p50_ns"] > 0) * 1e-9
    g["algbw_bytes_per_s"] = (g["message_bytes"].where(g["message_bytes"] > 0) / p50_s).astype("float64")
    order = np.lexsort((g["message_bytes"], g["collective"], g["rank"].where(g["rank"] >= 0, np.iinfo(np.int64).max)))
    return g.iloc[order][COLLECTIVE_COLUMNS].reset_index(drop=True)
