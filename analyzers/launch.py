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

from collections.abc import Iterator

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.idle import stream_blocks, stream_sort
from perfkit.analyzers.intervals import blocks
from perfkit.analyzers.linking import LAUNCH_APIS, gpu_ops, launch_times
from perfkit.analyzers.temporal import temporal_breakdown

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


def _latency_blocks(
    table: EventTable, ops: pd.DataFrame, order: np.ndarray, starts: np.ndarray, lo: int = 0, hi: int | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per block of the stream order[lo:hi]: (positions in `ops` of its linked ops, latency_ns,
    queue_ns). Memory: block-sized temporaries."""
    launch_row, ts_col = ops["launch_row"].to_numpy(), ops["ts_ns"].to_numpy()
    for _, o, new, prev, _ in stream_blocks(ops, order, starts, lo, hi):
        linked = launch_row[o] >= 0
        pos = o[linked]
        ts = ts_col[pos]
        l_end, l_dur = launch_times(table, ops, pos)
        l_end += l_dur
        blocker = np.where(~new[linked], np.minimum(prev[linked], ts), np.iinfo(np.int64).min // 2)
        ts -= l_end
        blocker -= l_end
        yield pos, ts, np.maximum(blocker, 0, out=blocker)


def _latency(table: EventTable, ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions in `ops` of the linked ops in stream order, latency_ns, queue_ns)."""
    order, starts = stream_sort(ops)
    parts = list(_latency_blocks(table, ops, order, starts))
    if not parts:
        return np.empty(0, dtype=order.dtype), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))  # type: ignore[return-value]


def launch_latency(table: EventTable, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per linked GPU op: rank, stream, name_id, api, step, launch cost and latency split."""
    ops = gpu_ops(table) if ops is None else ops
    pos, latency, queue = _latency(table, ops)
    out = pd.DataFrame({c: ops[c].to_numpy()[pos] for c in ("rank", "stream")})
    out["name_id"] = ops["name_id"].to_numpy()[pos].astype(np.int32)  # the frame's narrow ids, widened back
    out["api"] = ops["api"].array[pos]
    out["step"] = ops["step"].to_numpy()[pos].astype(np.int32 if len(pos) == 0 or int(ops["step"].max()) < 2**31 else np.int64)
    out["launch_row"] = ops["launch_row"].to_numpy()[pos]
    out["launch_dur_ns"] = launch_times(table, ops, pos)[1]
    out["dur_ns"] = ops["dur_ns"].to_numpy()[pos].astype(np.int64)
    out["latency_ns"], out["queue_ns"], out["overhead_ns"] = latency, queue, latency - queue
    return out


def _pct(values: np.ndarray, q: float, overwrite: bool = False) -> float:
    """np.percentile (linear); `overwrite` lets it partition `values` in place (no copy)."""
    return float(np.percentile(values, q, overwrite_input=overwrite)) if len(values) else float("nan")


def _rank_ranges(ops: pd.DataFrame, order: np.ndarray, starts: np.ndarray, ranks: list[int]) -> dict[int, tuple[int, int]]:
    """Per rank: its (lo, hi) in the stream order (each rank's ops are one run of it)."""
    head_rank = ops["rank"].to_numpy()[order[starts]].astype(np.int64)
    bounds = np.append(starts, len(order))
    out = {}
    for rank in ranks:
        first, last = np.searchsorted(head_rank, rank, side="left"), np.searchsorted(head_rank, rank, side="right")
        out[rank] = (int(bounds[first]), int(bounds[last]))
    return out


def _rank_launch(
    ops: pd.DataFrame, table: EventTable, order: np.ndarray, starts: np.ndarray, lo: int, hi: int
) -> dict[str, float | int]:
    """Launch calls, latency, queue and overhead statistics of the linked ops in order[lo:hi].

    Memory: one int64 per linked op (latency, queue and overhead each computed in its own pass
    over the stream order, then partitioned in place for the percentiles) and a bool per table
    row."""
    launch_row = ops["launch_row"].to_numpy()
    n = sum(int(np.count_nonzero(launch_row[order[a + lo : b + lo]] >= 0)) for a, b in blocks(hi - lo))
    values = np.empty(n, dtype=np.int64)
    graph_code = LAUNCH_APIS.index("graph")
    api = ops["api"].cat.codes.to_numpy()
    seen = np.zeros(len(table), dtype=bool)  # one per launch call (a graph launch starts many ops)
    out: dict[str, float | int] = {"linked_ops": n, "graph_ops": 0}
    for name in ("latency", "queue", "overhead"):
        k = 0
        for pos, lat, que in _latency_blocks(table, ops, order, starts, lo, hi):
            values[k : k + len(pos)] = lat if name == "latency" else que if name == "queue" else lat - que
            k += len(pos)
            if name == "latency":
                seen[launch_row[pos]] = True
                out["graph_ops"] += int(np.count_nonzero(api[pos] == graph_code))
        if name == "queue":
            out["empty_queue_share"] = float((values == 0).mean()) if n else float("nan")
        out[f"{name}_p50_ns"], out[f"{name}_p95_ns"] = _pct(values, 50, True), _pct(values, 95, True)
    del values
    rows = np.flatnonzero(seen)
    del seen
    calls = table["dur_ns"][rows]
    del rows
    calls = calls.astype(np.int64, copy=False)
    out["launch_calls"], out["cpu_launch_total_ns"] = len(calls), int(calls.sum())
    out["cpu_launch_p50_ns"], out["cpu_launch_p95_ns"] = _pct(calls, 50, True), _pct(calls, 95, True)
    return out


def _rank_kernels(ops: pd.DataFrame, rank: int, short_kernel_ns: int) -> dict[str, float | int]:
    """GPU ops, median duration, short-op share and ops per step of one rank (copies of its ops'
    durations and steps: 12 bytes per op of the rank)."""
    mine = ops["rank"].to_numpy() == rank
    durs = ops["dur_ns"].to_numpy()[mine]
    steps = ops["step"].to_numpy()[mine]
    del mine
    steps = steps[steps >= 0]
    return {
        "gpu_ops": len(durs),
        "short_kernel_share": float((durs < short_kernel_ns).mean()) if len(durs) else float("nan"),
        "kernel_p50_ns": _pct(durs, 50, True),  # after the share: partitions its copy in place
        "kernels_per_step": len(steps) / len(np.unique(steps)) if len(steps) else float("nan"),
    }


def launch_summary(table: EventTable, short_kernel_ns: int = SHORT_KERNEL_NS, ops: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per rank: launch cost, latency split, kernels per step, short kernels, verdict.

    Memory: the stream order (4 bytes per op), then per rank one int64 per linked op."""
    ops = gpu_ops(table) if ops is None else ops
    temporal = temporal_breakdown(table, per_step=False, ops=ops).set_index("rank")  # first: its temporaries go
    order, starts = stream_sort(ops)
    ranks = table.ranks if len(table) else []
    spans = _rank_ranges(ops, order, starts, ranks)
    rows = []
    for rank in ranks:
        row: dict[str, float | int | str] = {"rank": rank}
        row.update(_rank_kernels(ops, rank, short_kernel_ns))
        row.update(_rank_launch(ops, table, order, starts, *spans[rank]))
        row["gpu_idle_pct"] = float(temporal["idle_pct"].get(rank, float("nan")))
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
