"""Per-HLO-op table of a JAX / XLA trace: the device time of each HLO op, beside the kernels.

XLA names, per GPU op, the HLO instruction (`hlo_op`, e.g. "input_transpose_fusion.1") and
module (`hlo_module`, "jit_forward_3d_conv") it runs for; one op may launch several kernels
(a cuDNN convolution: im2col + GEMM). One row per (module, op): its GPU ops (`count`),
total / mean device time, share of all GPU time, and its kernels (distinct names, most time
first). Rows by total time, largest first. Traces without HLO names (Kineto, nsys) give no rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.loaders.xla.builder import hlo_names

HLO_COLUMNS = ["hlo_module", "hlo_op", "count", "total_ns", "mean_ns", "share_pct", "distinct_kernels", "kernels"]
MAX_KERNELS_NAMED = 3


def _empty() -> pd.DataFrame:
    types = {"count": "int64", "total_ns": "int64", "mean_ns": "float64", "share_pct": "float64", "distinct_kernels": "int64"}
    return pd.DataFrame({c: pd.Series(dtype=types.get(c, "object")) for c in HLO_COLUMNS})


def _kernel_list(group: pd.DataFrame) -> str:
    by_name = group.groupby("kernel", sort=False)["dur_ns"].sum().sort_values(ascending=False, kind="stable")
    shown = list(by_name.index[:MAX_KERNELS_NAMED])
    more = len(by_name) - len(shown)
    return ", ".join(shown) + (f" (+{more})" if more > 0 else "")


def hlo_op_summary(table: EventTable) -> pd.DataFrame:
    """One row per (HLO module, HLO op) with GPU ops; see the module doc."""
    gpu = np.flatnonzero(table.gpu_mask())
    if len(gpu) == 0:
        return _empty()
    op, module = hlo_names(table, gpu)
    named = op != ""
    if not named.any():
        return _empty()
    rows = gpu[named]
    df = pd.DataFrame({"hlo_module": module[named], "hlo_op": op[named],
                       "kernel": table.name_of(table["name_id"][rows]),
                       "dur_ns": table["dur_ns"][rows].astype(np.int64)})
    total_gpu = int(table["dur_ns"][gpu].astype(np.int64).sum())
    groups = df.groupby(["hlo_module", "hlo_op"], sort=False)
    out = groups["dur_ns"].agg(count="size", total_ns="sum").reset_index()
    out["mean_ns"] = out["total_ns"] / out["count"]
    out["share_pct"] = 100.0 * out["total_ns"] / total_gpu if total_gpu else np.nan
    out["distinct_kernels"] = groups["kernel"].nunique().to_numpy()
    out["kernels"] = [_kernel_list(g) for _, g in groups]
    out = out.sort_values(["total_ns", "hlo_module", "hlo_op"], ascending=[False, True, True], kind="stable")
    return out[HLO_COLUMNS].reset_index(drop=True)
