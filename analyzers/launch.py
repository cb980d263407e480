"""Launch overhead: what launching costs the CPU, how long a GPU op waits to start, and why.

Per linked GPU op (launch call L, op k, previous op on k's stream ending at prev_end):
    latency_ns  = k.ts - L.end                        (HTA's "launch delay", not clipped)
    queue_ns    = clip(min(prev_end, k.ts) - L.end, 0) (k waited behind earlier work on its stream)
    overhead_ns = latency_ns - queue_ns               (launch -> start with the stream free)
HTA reports latency alone, so a deep queue reads as a slow launch. Graph-replayed kernels
belong to their cudaGraphLaunch / hipGraphLaunch: later nodes queue behind earlier ones.

The launch-bound verdict (per rank) needs all three signs of a GPU starved by its CPU:
- the GPU is idle a large part of the time (idle >= 20% of the GPU span);
- most GPU ops find their stream empty (queue_ns == 0 for >= 50% of them): work is not
  piling up, it is consumed as fast as it arrives;
- GPU ops are short next to the CPU's cost to launch them (median op duration <= 2x the
  median launch call).
Fewer than 20 linked ops give "insufficient data".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzers.event_table import EventTable
from analyzers.idle import stream_order
from analyzers.linking import gpu_ops
from analyzers.temporal import temporal_breakdown

SHORT_KERNEL_NS = 10_000
IDLE_PCT_MIN = 20.0
EMPTY_QUEUE_SHARE_MIN = 0.5
OP_TO_LAUNCH_MAX = 2.0
MIN_OPS = 20

LAUNCH_COLUMNS = [
    "rank", "gpu_ops", "linked_ops", "graph_ops", "launch_calls", "cpu_launch_total_ns",
    "cpu_launch_p50_ns", "cpu_launch_p95_ns", "latency_p50_ns", "latency_p95_ns",
    "queue_p50_ns", "queue_p95_ns", "overhead_p50_ns", "overhead_p95_ns", "empty_queue_share",
    "kernel_p50_ns", "short_kernel_share", "kernels_per_step", "gpu_idle_pct", "verdict", "evidence",
]  # fmt: skip


def launch_latency(table: EventTable, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per linked GPU op: rank, stream, name_id, api, step, launch cost and latency split."""
    ops = gpu_ops(table) if ops is None else ops
    order, same, prev = stream_order(ops)
    linked = ops["launch_row"].to_numpy()[order] >= 0
    ts = ops["ts_ns"].to_numpy()[order]
    l_end = ops["launch_end_ns"].to_numpy()[order]
    latency = ts - l_end
    blocker = np.where(same, np.minimum(prev, ts), np.iinfo(np.int64).min // 2)
    queue = np.maximum(blocker - l_end, 0)
    col = {c: ops[c].to_numpy()[order] for c in ("rank", "stream", "name_id", "step", "launch_row", "launch_dur_ns", "dur_ns")}
    out = pd.DataFrame(
        {
            **{c: col[c] for c in ("rank", "stream", "name_id")},
            "api": ops["api"].array[order],
            **{c: col[c] for c in ("step", "launch_row", "launch_dur_ns", "dur_ns")},
            "latency_ns": latency,
            "queue_ns": queue,
            "overhead_ns": latency - queue,
        }
    )
    return out[linked].reset_index(drop=True)


def _pct(values: pd.Series, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def launch_summary(table: EventTable, short_kernel_ns: int = SHORT_KERNEL_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per rank: launch cost, latency split, kernels per step, short kernels, verdict."""
    ops = gpu_ops(table) if ops is None else ops
    lat = launch_latency(table, ops)
    temporal = temporal_breakdown(table, per_step=False, ops=ops).set_index("rank")
    rows = []
    for rank in table.ranks if len(table) else []:
        r_ops = ops[ops["rank"] == rank]
        r_lat = lat[lat["rank"] == rank]
        calls = r_lat.drop_duplicates("launch_row")["launch_dur_ns"]
        steps = r_ops.loc[r_ops["step"] >= 0, "step"]
        idle_pct = float(temporal["idle_pct"].get(rank, float("nan")))
        row: dict[str, float | int | str] = {
            "rank": rank,
            "gpu_ops": len(r_ops),
            "linked_ops": len(r_lat),
            "graph_ops": int((r_lat["api"] == "graph").sum()),
            "launch_calls": len(calls),
            "cpu_launch_total_ns": int(calls.sum()),
            "cpu_launch_p50_ns": _pct(calls, 50),
            "cpu_launch_p95_ns": _pct(calls, 95),
            "latency_p50_ns": _pct(r_lat["latency_ns"], 50),
            "latency_p95_ns": _pct(r_lat["latency_ns"], 95),
            "queue_p50_ns": _pct(r_lat["queue_ns"], 50),
            "queue_p95_ns": _pct(r_lat["queue_ns"], 95),
            "overhead_p50_ns": _pct(r_lat["overhead_ns"], 50),
            "overhead_p95_ns": _pct(r_lat["overhead_ns"], 95),
            "empty_queue_share": float((r_lat["queue_ns"] == 0).mean()) if len(r_lat) else float("nan"),
            "kernel_p50_ns": _pct(r_ops["dur_ns"], 50),
            "short_kernel_share": float((r_ops["dur_ns"] < short_kernel_ns).mean()) if len(r_ops) else float("nan"),
            "kernels_per_step": float(steps.value_counts().mean()) if len(steps) else float("nan"),
            "gpu_idle_pct": idle_pct,
        }
        row["verdict"], row["evidence"] = verdict(row)
        rows.append(row)
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in LAUNCH_COLUMNS})
    return pd.DataFrame(rows)[LAUNCH_COLUMNS]


def verdict(row: dict[str, float | int | str]) -> tuple[str, str]:
    """("launch-bound" | "not launch-bound" | "insufficient data", the evidence in one line)."""
    n = int(row["linked_ops"])
    if n < MIN_OPS:
        return "insufficient data", f"{n} GPU ops linked to a launch call (need {MIN_OPS})"
    idle = float(row["gpu_idle_pct"])
    empty = float(row["empty_queue_share"])
    k50 = float(row["kernel_p50_ns"])
    c50 = float(row["cpu_launch_p50_ns"])
    signs = [
        (idle >= IDLE_PCT_MIN, f"GPU idle {idle:.1f}% of its span (threshold {IDLE_PCT_MIN:.0f}%)"),
        (
            empty >= EMPTY_QUEUE_SHARE_MIN,
            f"{100 * empty:.0f}% of ops found their stream empty (threshold {100 * EMPTY_QUEUE_SHARE_MIN:.0f}%)",
        ),
        (
            k50 <= OP_TO_LAUNCH_MAX * c50,
            f"median op {k50 / 1e3:.1f} us vs median launch call {c50 / 1e3:.1f} us (bound: op <= {OP_TO_LAUNCH_MAX:g}x launch)",
        ),
    ]
    bound = all(ok for ok, _ in signs)
    mark = "; ".join(("yes: " if ok else "no: ") + text for ok, text in signs)
    return ("launch-bound" if bound else "not launch-bound"), mark
