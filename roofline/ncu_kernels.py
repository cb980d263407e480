"""From ncu metrics to a roofline kernel table: measured flop per dtype and bytes per level.

- SIMT flop: fp32 = fadd + fmul + 2 ffma of `s{m,msp}__sass_thread_inst_executed_op_*_pred_on.sum`
  (d* for fp64, h* for half precision, placed as "fp16_simt": not against the tensor peak).
- Tensor-core flop: `sm__ops_path_tensor_src_<dtype>[_dst_<acc>][_sparsity_<on|off>].sum`
  (ops = flop: an fp8 GEMM of M x N x K reads 2MNK). Per source dtype the most aggregate metric
  present is used, so dst / sparsity variants are never counted twice.
- Bytes: dram = dram__bytes_read + dram__bytes_write (or dram__bytes.sum), l2 = lts__t_bytes.sum,
  l1 = l1tex__t_bytes.sum. Time: gpu__time_duration.sum.
The kernel's dtype is the category holding most of its flop; `flop` is the total.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import pandas as pd

from perfkit.core.errors import TraceError

TIME_METRIC = "gpu__time_duration.sum"
SIMT = {"f": "fp32", "d": "fp64", "h": "fp16_simt"}
_SIMT_RE = re.compile(r"^(?:sm|smsp)__sass_thread_inst_executed_op_([fdh])(add|mul|fma)_pred_on\.sum$")
_TENSOR_RE = re.compile(
    r"^sm__ops_path_tensor(?:_op_[a-z0-9]+)?_src_(?P<src>[a-z0-9]+(?:_[a-z]+[0-9]+)*?)"
    r"(?:_dst_(?P<dst>[a-z0-9]+))?(?:_sparsity_(?P<sp>on|off))?\.sum$"
)
TENSOR_DTYPES = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp8": "fp8", "fp64": "fp64", "int8": "int8"}
BYTES_METRICS = {
    "dram": (("dram__bytes.sum",), ("dram__bytes_read.sum", "dram__bytes_write.sum")),
    "l2": (("lts__t_bytes.sum",),),
    "l1": (("l1tex__t_bytes.sum",),),
}


def simt_flop(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Flop per SIMT precision; each category only when its metrics were collected."""
    out: dict[str, pd.Series] = {}
    seen: set[tuple[str, str]] = set()
    for column in df.columns:
        m = _SIMT_RE.match(str(column))
        if not m or (m.group(1), m.group(2)) in seen:
            continue  # sm__ and smsp__ spell the same counter: count it once
        seen.add((m.group(1), m.group(2)))
        weight = 2.0 if m.group(2) == "fma" else 1.0
        name = SIMT[m.group(1)]
        term = weight * df[column].astype(float).fillna(0.0)
        out[name] = out[name] + term if name in out else term
    return out


def tensor_flop(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Tensor-core flop per source dtype, from the most aggregate metric of each dtype."""
    groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for column in df.columns:
        m = _TENSOR_RE.match(str(column))
        if not m:
            continue
        src = m.group("src")
        dtype = TENSOR_DTYPES.get(src, src)
        # aggregation rank: 0 = src only, 1 = src+dst, 2 = src+sparsity, 3 = src+dst+sparsity
        rank = (1 if m.group("dst") else 0) + (2 if m.group("sp") else 0)
        groups[dtype].append((rank, str(column)))
    out: dict[str, pd.Series] = {}
    for dtype, items in groups.items():
        best = min(rank for rank, _ in items)
        cols = [c for rank, c in items if rank == best]
        out[dtype] = sum((df[c].astype(float).fillna(0.0) for c in cols), pd.Series(0.0, index=df.index))
    return out


def level_bytes(df: pd.DataFrame) -> dict[str, pd.Series]:
    out: dict[str, pd.Series] = {}
    for level, alternatives in BYTES_METRICS.items():
        for names in alternatives:
            if all(n in df.columns for n in names):
                out[level] = sum((df[n].astype(float) for n in names), pd.Series(0.0, index=df.index))
                break
    return out


def kernel_table(ncu: pd.DataFrame, origin: str = "ncu csv") -> pd.DataFrame:
    """One row per kernel launch: name, time_s, flop (+ per category), dtype, bytes per level."""
    if TIME_METRIC not in ncu.columns:
        raise TraceError(f"{origin}: no {TIME_METRIC} column; collect it (roofline.ncu.build_command does)")
    flop_by = {**simt_flop(ncu), **{f"tensor_{k}": v for k, v in tensor_flop(ncu).items()}}
    if not flop_by:
        raise TraceError(
            f"{origin}: no flop metrics (sass_thread_inst_executed_op_* / sm__ops_path_tensor_*); "
            "collect the roofline metric set (roofline.ncu.ROOFLINE_METRICS)"
        )
    table = pd.DataFrame(index=ncu.index)
    table["id"] = ncu["id"] if "id" in ncu.columns else range(len(ncu))
    table["name"] = ncu["kernel_name"] if "kernel_name" in ncu.columns else ""
    table["kind"] = "kernel"
    table["workload"] = "ncu"
    table["time_s"] = ncu[TIME_METRIC].astype(float)
    for name, series in flop_by.items():
        table[f"flop_{name}"] = series
    flop_cols = [f"flop_{n}" for n in flop_by]
    table["flop"] = table[flop_cols].sum(axis=1)
    table["dtype"] = [_dominant(row, flop_by) for _, row in table[flop_cols].iterrows()]
    for level, series in level_bytes(ncu).items():
        table[f"bytes_{level}"] = series
    table["key"] = [f"ncu/{i}/{n}" for i, n in zip(table["id"], table["name"], strict=True)]
    return table.reset_index(drop=True)


def _dominant(row: pd.Series, flop_by: dict[str, pd.Series]) -> str:
    best_name, best = "", -math.inf
    for name in flop_by:
        value = float(row[f"flop_{name}"])
        if value > best:
            best_name, best = name, value
    if best <= 0:
        return "fp32"
    return best_name.removeprefix("tensor_")
