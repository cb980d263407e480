"""Multi-rank analyses: communication / computation overlap and per-rank skew.

Ranks' clocks are not aligned across hosts, so skew compares durations, never timestamps.
- overlap: per rank, comm_ns = union of communication ops, overlap_ns = the part of it during
  which a compute op also ran; overlap_pct = overlap / comm (HTA's definition).
- skew: per (rank, step) the GPU span, busy, compute and communication time of the step's
  ops and the CPU duration of its ProfilerStep; per rank the means over steps and how much
  longer its compute takes than the fastest rank's (`skew_pct`): a straggler computes longer
  and the others wait for it inside their collectives (so their communication time grows,
  which is why communication is not the yardstick). Without ProfilerSteps the whole trace
  is one step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.categories import compute_mask
from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.intervals import grouped_union_ns
from perfkit.analyzers.linking import gpu_ops, op_ends
from perfkit.analyzers.steps.profiler_steps import step_windows
from perfkit.analyzers.temporal import breakdown, rank_index, step_codes

OVERLAP_COLUMNS = ["rank", "comm_ns", "compute_ns", "overlap_ns", "overlap_pct"]
SKEW_COLUMNS = [
    "rank", "steps", "step_cpu_mean_ns", "step_gpu_span_mean_ns", "step_busy_mean_ns",
    "step_compute_mean_ns", "step_comm_mean_ns", "skew_pct", "comm_share_pct",
]  # fmt: skip


def comm_overlap(table: EventTable) -> pd.DataFrame:
    """Per rank: communication time, compute time and their overlap (|A| + |B| - |A u B|).

    Memory: three blockwise union passes over the frame with bool masks (a few bytes per op)."""
    ops = gpu_ops(table)
    ranks = np.asarray(table.ranks if len(table) else [], dtype=np.int64)
    rank_idx = rank_index(ranks, ops["rank"].to_numpy())
    is_comm = (ops["category"] == "communication").to_numpy()
    is_comp = compute_mask(ops["category"])
    ts, end = ops["ts_ns"].to_numpy(), op_ends(ops)
    comm = grouped_union_ns(rank_idx, ts, end, len(ranks), where=is_comm)
    comp = grouped_union_ns(rank_idx, ts, end, len(ranks), where=is_comp)
    either = grouped_union_ns(rank_idx, ts, end, len(ranks), where=is_comm | is_comp)
    rows = []
    for i, rank in enumerate(ranks.tolist()):
        comm_ns, comp_ns = int(comm[i]), int(comp[i])
        overlap = comm_ns + comp_ns - int(either[i])
        rows.append(
            {
                "rank": rank,
                "comm_ns": comm_ns,
                "compute_ns": comp_ns,
                "overlap_ns": overlap,
                "overlap_pct": 100.0 * overlap / comm_ns if comm_ns else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS)


def step_table(table: EventTable) -> pd.DataFrame:
    """Per (rank, step): cpu_ns (ProfilerStep duration), GPU span / busy / compute / comm.

    Memory: the breakdowns' blockwise passes with bool masks; per-step codes in a narrow dtype."""
    ops = gpu_ops(table)
    windows = step_windows(table)
    use_steps = not windows.empty and bool((ops["step"] >= 0).any())
    ranks = np.asarray(table.ranks if len(table) else [], dtype=np.int64)
    rank_idx = rank_index(ranks, ops["rank"].to_numpy())
    ts, end = ops["ts_ns"].to_numpy(), op_ends(ops)
    comm = (ops["category"] == "communication").to_numpy()
    compute = compute_mask(ops["category"])
    keep = ops["step"].to_numpy() >= 0 if use_steps else None
    if keep is not None:
        (u_rank, u_step), codes = step_codes(ranks, rank_idx, ops["step"].to_numpy(), keep)
        comm = comm & keep
    else:  # the whole trace is one step (0) per rank: the rank index is the group
        (u_rank, u_step), codes = (ranks, np.zeros(len(ranks), dtype=np.int64)), rank_idx
    n = len(u_rank)
    all_ = breakdown(codes, ts, end, compute, n, where=keep)
    comm_ns = grouped_union_ns(codes, ts, end, n, where=comm)
    out = pd.DataFrame(
        {
            "rank": u_rank,
            "step": u_step,
            "gpu_span_ns": all_["span_ns"].to_numpy(),
            "busy_ns": all_["busy_ns"].to_numpy(),
            "compute_ns": all_["compute_ns"].to_numpy(),
            "comm_ns": comm_ns,
        }
    )
    if use_steps:
        cpu = windows.groupby(["rank", "step"])["end_ns"].max() - windows.groupby(["rank", "step"])["ts_ns"].min()
        out["cpu_ns"] = cpu.reindex(pd.MultiIndex.from_arrays([out["rank"], out["step"]])).to_numpy()
    else:  # ranks without GPU ops have no step
        out = out[all_["gpu_ops"].to_numpy() > 0].reset_index(drop=True)
        out["cpu_ns"] = np.nan
    return out


def rank_skew(table: EventTable) -> pd.DataFrame:
    steps = step_table(table)
    if steps.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in SKEW_COLUMNS})
    g = steps.groupby("rank").agg(
        steps=("step", "size"),
        step_cpu_mean_ns=("cpu_ns", "mean"),
        step_gpu_span_mean_ns=("gpu_span_ns", "mean"),
        step_busy_mean_ns=("busy_ns", "mean"),
        step_compute_mean_ns=("compute_ns", "mean"),
        step_comm_mean_ns=("comm_ns", "mean"),
    )
    work = g["step_compute_mean_ns"]
    fastest = work[work > 0].min() if (work > 0).any() else np.nan
    g["skew_pct"] = 100.0 * (work / fastest - 1.0)
    g["comm_share_pct"] = 100.0 * g["step_comm_mean_ns"] / g["step_busy_mean_ns"].where(g["step_busy_mean_ns"] > 0)
    return g.reset_index()[SKEW_COLUMNS]
