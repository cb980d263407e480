"""HTA's temporal breakdown, reproduced on an `EventTable` to measure perfkit against it.

HolisticTraceAnalysis 0.5.0 differs from perfkit's `temporal_breakdown` in four choices
(docs/analyzers.md, "Differences from HTA"); this module applies all four so that the core
definition can be checked number for number against HTA's own output:
1. CUDA sync records (cat cuda_sync: "Stream Sync", "Event Sync" ...) with a stream count as
   GPU activity (HTA keeps every event with a stream);
2. with two or more ProfilerSteps, GPU ops launched at or after the start of the last step,
   and GPU ops whose launch is not in the trace, are dropped;
3. traces with fractional-microsecond timestamps are rounded to whole microseconds, start up
   and end down (HTA's `round_down_time_stamps`);
4. kernel classes by HTA's regexes: communication `^nccl.*Kernel`; memory `^Memcpy|^Memset|^dma`;
   compute = not (`^nccl.*Kernel` | `.*Memcpy` | `^Memset` | `.*Sync`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfkit.analyzers.categories import categorize, compute_mask
from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.steps.profiler_steps import step_windows
from perfkit.analyzers.temporal import breakdown

_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def hta_is_compute(name: str) -> bool:
    return _NOT_COMPUTE.match(name) is None


def hta_gpu_rows(table: EventTable, sync: bool = True, last_step: bool = True) -> np.ndarray:
    """The rows HTA's temporal breakdown sees (choices 1 and 2)."""
    kind = table["kind"]
    rows = table.gpu_mask() | ((kind == Kind.SYNC) & (table["stream"] >= 0) & sync)
    windows = step_windows(table)
    if not last_step or windows["step"].nunique() < 2:
        return np.flatnonzero(rows)
    keep = np.zeros(len(table), dtype=bool)
    corr = table["correlation"]
    cpu = np.flatnonzero(~rows & (corr >= 0) & (kind != Kind.GPU_ANNOTATION))
    for rank, w in windows.groupby("rank"):
        last_start = w["ts_ns"].max()
        in_rank = table["rank"] == rank
        early = cpu[(table["ts_ns"][cpu] < last_start) & in_rank[cpu]]
        keep |= rows & in_rank & np.isin(corr, corr[early]) & (corr >= 0)
    return np.flatnonzero(keep)


def hta_temporal_breakdown(
    table: EventTable, sync: bool = True, last_step: bool = True, round_us: bool = True, hta_classes: bool = True
) -> pd.DataFrame:
    """Per rank: idle / compute / non-compute as HTA 0.5.0 computes them (choices 1-4).

    Each flag turns one choice off, to measure its effect (all off = perfkit's definition).
    """
    rows = hta_gpu_rows(table, sync, last_step)
    ts = table["ts_ns"][rows]
    end = ts + table["dur_ns"][rows]
    fractional = bool(((table["ts_ns"] % 1000) != 0).any() or ((table["dur_ns"] % 1000) != 0).any())
    if fractional and round_us:
        ts = -((-ts) // 1000) * 1000  # ceil to a whole microsecond
        end = (end // 1000) * 1000  # floor
    if hta_classes:
        lut = np.asarray([hta_is_compute(n) for n in table.names] or [False], dtype=bool)
        compute = lut[table["name_id"][rows]]
    else:
        compute = compute_mask(categorize(table, rows)) & (table["kind"][rows] != Kind.SYNC)
    ranks = np.asarray(table.ranks, dtype=np.int64)
    groups = np.searchsorted(ranks, table["rank"][rows].astype(np.int64))
    out = breakdown(groups, ts, end, compute, len(ranks))
    out.insert(0, "rank", ranks)
    return out
