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
from analyzers.linking import LAUNCH_APIS, gpu_ops
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


def _latency(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions in `ops` of the linked ops in stream order, latency_ns, queue_ns)."""
    order, same, prev = stream_order(ops)
    linked = ops["launch_row"].to_numpy()[order] >= 0
    pos = order[linked]
    ts = ops["ts_ns"].to_numpy()[pos]
    l_end = ops["launch_ts_ns"].to_numpy()[pos] + ops["launch_dur_ns"].to_numpy()[pos]
    blocker = np.where(same[linked], np.minimum(prev[linked], ts), np.iinfo(np.int64).min // 2)
    return pos, ts - l_end, np.maximum(blocker - l_end, 0)


def launch_latency(table: EventTable, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per linked GPU op: rank, stream, name_id, api, step, launch cost and latency split."""
    ops = gpu_ops(table) if ops is None else ops
    pos, latency, queue = _latency(ops)
    out = pd.DataFrame({c: ops[c].to_numpy()[pos] for c in ("rank", "stream", "name_id")})
    out["api"] = ops["api"].array[pos]
    for c in ("step", "launch_row", "launch_dur_ns", "dur_ns"):
        out[c] = ops[c].to_numpy()[pos]
    out["latency_ns"], out["queue_ns"], out["overhead_ns"] = latency, queue, latency - queue
    return out


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def launch_summary(table: EventTable, short_kernel_ns: int = SHORT_KERNEL_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per rank: launch cost, latency split, kernels per step, short kernels, verdict."""
    ops = gpu_ops(table) if ops is None else ops
    temporal = temporal_breakdown(table, per_step=False, ops=ops).set_index("rank")  # first: its temporaries go
    pos, latency, queue = _latency(ops)
    op_rank, op_dur, op_step = (ops[c].to_numpy() for c in ("rank", "dur_ns", "step"))
    l_rank = op_rank[pos]
    l_row = ops["launch_row"].to_numpy()[pos]
    l_graph = ops["api"].cat.codes.to_numpy()[pos] == LAUNCH_APIS.index("graph")
    rows = []
    for rank in table.ranks if len(table) else []:
        mine = op_rank == rank
        lm = np.flatnonzero(l_rank == rank)
        seen = np.zeros(len(table), dtype=bool)  # one per launch call (a graph launch starts many ops)
        seen[l_row[lm]] = True
        calls = table["dur_ns"][np.flatnonzero(seen)].astype(np.int64)
        del seen
        durs = op_dur[mine]
        steps = op_step[mine]
        steps = steps[steps >= 0]
        lat, que = latency[lm], queue[lm]
        idle_pct = float(temporal["idle_pct"].get(rank, float("nan")))
        row: dict[str, float | int | str] = {
            "rank": rank,
            "gpu_ops": len(durs),
            "linked_ops": len(lm),
            "graph_ops": int(l_graph[lm].sum()),
            "launch_calls": len(calls),
            "cpu_launch_total_ns": int(calls.sum()),
            "cpu_launch_p50_ns": _pct(calls, 50),
            "cpu_launch_p95_ns": _pct(calls, 95),
            "latency_p50_ns": _pct(lat, 50),
            "latency_p95_ns": _pct(lat, 95),
            "queue_p50_ns": _pct(que, 50),
            "queue_p95_ns": _pct(que, 95),
            "overhead_p50_ns": _pct(lat - que, 50),
            "overhead_p95_ns": _pct(lat - que, 95),
            "empty_queue_share": float((que == 0).mean()) if len(lm) else float("nan"),
            "kernel_p50_ns": _pct(durs, 50),
            "short_kernel_share": float((durs < short_kernel_ns).mean()) if len(durs) else float("nan"),
            "kernels_per_step": len(steps) / len(np.unique(steps)) if len(steps) else float("nan"),
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
