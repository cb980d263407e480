"""Per-op achieved FLOP/s and bytes/s where the trace recorded shapes (record_shapes=True).

Shapes read as `[8,4096]x[4096,4096]` (input_dims: one bracket per input, trailing scalar
inputs left out). Each call of a supported op (analyzers.op_cost.OP_COSTS: mm, addmm, bmm, baddbmm, matmul,
linear, scaled_dot_product_attention and its flash / efficient / cudnn variants) gets its FLOP
and minimal bytes from `Input Dims`, `Input type` and `Concrete Inputs` (is_causal). Its time
is the GPU busy time of the kernels it launched (range projection) or, when it launched none
(a CPU trace), its CPU duration. Only the outermost supported op of a nest counts
(aten::linear, not the aten::addmm inside it), so the rows do not double count.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.op_cost import OP_COSTS, op_cost
from perfkit.analyzers.ranges import project

OP_COLUMNS = [
    "op", "input_dims", "dtype", "calls", "flop", "bytes", "time_ns", "mean_time_ns",
    "flop_per_s", "bytes_per_s", "flop_per_byte", "time_source",
]  # fmt: skip


def _parse(text: str) -> list[Any]:
    try:
        value = msgspec.json.decode(text) if text else []
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []


def compact_dims(text: str) -> str:
    """Input Dims as one short line: `[[8, 4096], [4096, 4096]]` -> `[8,4096]x[4096,4096]`;
    trailing non-tensor inputs (`[]`) left out, a tensor list kept as nested brackets; text that
    is not a JSON list stays as it is (on one line)."""
    dims = _parse(text)
    if not dims:
        return " ".join(text.split())
    while dims and dims[-1] == []:
        dims = dims[:-1]
    return "x".join(msgspec.json.encode(d).decode() for d in dims) or "[]"


def _outermost(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """The rows not nested inside another of `rows` on the same thread."""
    end = table["ts_ns"][rows] + table["dur_ns"][rows]
    df = pd.DataFrame(
        {
            "r": table["rank"][rows], "p": table["pid"][rows], "t": table["tid"][rows],
            "ts": table["ts_ns"][rows], "neg_end": -end, "end": end, "row": rows,
        }
    ).sort_values(["r", "p", "t", "ts", "neg_end"], kind="stable")  # fmt: skip
    thread = [df["r"], df["p"], df["t"]]
    prev_end = df.groupby(thread, sort=False)["end"].cummax().groupby(thread, sort=False).shift(1)
    nested = (df["ts"] < prev_end).to_numpy(dtype=bool)
    return np.sort(df["row"].to_numpy()[~nested])


def op_calls(table: EventTable) -> pd.DataFrame:
    """One row per call of a supported op: op, dims_id, types_id, flop, bytes, time_ns, source."""
    ids = table.name_ids_matching(lambda n: n in OP_COSTS)
    cpu = np.flatnonzero(table.mask_kind(Kind.CPU_OP))
    rows = _outermost(table, cpu[np.isin(table["name_id"][cpu], ids) & (table["dims_id"][cpu] >= 0)])
    key = pd.MultiIndex.from_arrays(
        [table["name_id"][rows], table["dims_id"][rows], table["types_id"][rows], table["concrete_id"][rows]]
    )
    codes, uniq = pd.factorize(key)
    costs = np.full((len(uniq), 2), np.nan)
    for i, (name_id, dims_id, types_id, conc_id) in enumerate(uniq):
        text = table.args_text
        cost = op_cost(
            table.names[name_id],
            _parse(text[dims_id]),
            _parse(text[types_id]) if types_id >= 0 else [],
            _parse(text[conc_id]) if conc_id >= 0 else [],
        )
        if cost is not None:
            costs[i] = cost
    proj = project(table, rows)
    on_gpu = proj["gpu_ops"].to_numpy() > 0
    out = pd.DataFrame(
        {
            "rank": table["rank"][rows],
            "op": table.name_of(table["name_id"][rows]),
            "dims_id": table["dims_id"][rows],
            "types_id": table["types_id"][rows],
            "flop": costs[codes, 0] if len(rows) else np.empty(0),
            "bytes": costs[codes, 1] if len(rows) else np.empty(0),
            "time_ns": np.where(on_gpu, proj["gpu_busy_ns"].to_numpy(), table["dur_ns"][rows]),
            "time_source": np.where(on_gpu, "gpu", "cpu"),
        }
    )
    return out[out["flop"].notna()].reset_index(drop=True)


def op_throughput(table: EventTable) -> pd.DataFrame:
    """Per (op, shapes, dtypes, time source): calls, FLOP and bytes per call, achieved rates."""
    calls = op_calls(table)
    if calls.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in OP_COLUMNS})
    g = calls.groupby(["op", "dims_id", "types_id", "time_source"], sort=False).agg(
        calls=("flop", "size"), flop=("flop", "first"), bytes=("bytes", "first"),
        flop_total=("flop", "sum"), bytes_total=("bytes", "sum"), time_ns=("time_ns", "sum"),
    ).reset_index()  # fmt: skip
    seconds = g["time_ns"].where(g["time_ns"] > 0) / 1e9
    g["mean_time_ns"] = g["time_ns"] / g["calls"]
    g["flop_per_s"] = g["flop_total"] / seconds
    g["bytes_per_s"] = g["bytes_total"] / seconds
    g["flop_per_byte"] = g["flop"] / g["bytes"]
    g["input_dims"] = [compact_dims(table.args_text[i]) for i in g["dims_id"]]
    g["dtype"] = [",".join(str(t) for t in _parse(table.args_text[i]) if t) if i >= 0 else "" for i in g["types_id"]]
    g = g.sort_values("time_ns", ascending=False, kind="stable")
    return g[OP_COLUMNS].reset_index(drop=True)
