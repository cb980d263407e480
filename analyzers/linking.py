"""CPU-GPU linking by correlation id, and the per-GPU-op frame the analyses share.

Every GPU op (kernel, memcpy, memset) carries the correlation id of the runtime / driver call
that enqueued it: cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex), cudaMemcpyAsync,
cudaMemsetAsync, hipLaunchKernel, hipExtModuleLaunchKernel, hipModuleLaunchKernel, ... and for
CUDA / HIP graphs cudaGraphLaunch / hipGraphLaunch, whose correlation id is shared by every
kernel the graph replays. The join is many-to-one on (rank, correlation), so each replayed
kernel is attributed to its graph launch (HTA keeps one kernel per correlation).
"""

from __future__ import annotations

import re
import sys
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.categories import categorize
from perfkit.analyzers.event_table import EventTable, Kind, narrowest
from perfkit.analyzers.intervals import EndsOf, blocks
from perfkit.analyzers.steps.profiler_steps import attribute_steps, step_windows
from perfkit.core.memory import release_freed

LAUNCH_APIS = ("kernel", "graph", "memcpy", "memset", "other")
_API_RULES = (
    ("graph", re.compile(r"graphlaunch", re.I)),
    ("memcpy", re.compile(r"memcpy", re.I)),
    ("memset", re.compile(r"memset", re.I)),
    ("kernel", re.compile(r"launch", re.I)),
)


def launch_api(name: str) -> str:
    """What a runtime call enqueues: kernel / graph / memcpy / memset / other."""
    for api, pattern in _API_RULES:
        if pattern.search(name):
            return api
    return "other"


def link_rows(table: EventTable) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(gpu_rows, launch_rows): every GPU op row and its runtime call row (-1 when not traced;
    of several calls with the op's correlation id on its rank, the first). Row numbers are
    int32 below 2**31 rows.

    Memory: one rank at a time, keys as narrow as the correlation column (no table-wide int64
    keys, no np.unique copies: ~17 bytes per runtime call of the rank at the peak)."""
    index_dt = _index_dtype(table)
    gpu = np.flatnonzero(table.gpu_mask()).astype(index_dt)
    launch = np.full(len(gpu), -1, dtype=index_dt)
    corr, rank = table["correlation"], table["rank"]
    calls = table.mask_kind(Kind.RUNTIME)
    calls &= corr > 0
    gpu_rank = rank[gpu]
    for r in np.unique(gpu_rank).tolist():
        mine_calls = calls & (rank == r)
        rt = np.flatnonzero(mine_calls).astype(index_dt)
        del mine_calls
        if len(rt) == 0:
            continue
        keys, first = _first_of_each(corr[rt])
        rt = rt[first]
        del first
        mine = np.flatnonzero(gpu_rank == r).astype(index_dt)
        gkey = corr[gpu[mine]]
        pos = np.searchsorted(keys, gkey)
        np.minimum(pos, len(keys) - 1, out=pos)
        hit = (keys[pos] == gkey) & (gkey > 0)
        launch[mine[hit]] = rt[pos[hit]]
    return gpu, launch


def _index_dtype(table: EventTable) -> np.dtype[Any]:
    """Row numbers' dtype: int32 below 2**31 rows."""
    return np.dtype(np.int32) if len(table) < np.iinfo(np.int32).max else np.dtype(np.int64)


def _first_of_each(keys: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(sorted distinct keys, position of each one's first occurrence in `keys`).

    One int64 per key sorted in place (key << 32 | position: distinct, so any sort is stable)."""
    n = len(keys)
    if n >= 1 << 31 or (n and (int(keys.min()) < 0 or int(keys.max()) >= 1 << 31)):
        order = np.argsort(keys, kind="stable")  # outside the packed range: the plain way
        ordered = keys[order]
    else:
        packed = keys.astype(np.int64)
        packed <<= 32
        for lo in range(0, n, 1 << 20):
            packed[lo : lo + (1 << 20)] |= np.arange(lo, min(lo + (1 << 20), n), dtype=np.int64)
        packed.sort()
        halves = packed.view(np.uint32).reshape(-1, 2)  # (low, high) words of each value
        lo_word, hi_word = (0, 1) if sys.byteorder == "little" else (1, 0)
        ordered, order = halves[:, hi_word].view(np.int32), halves[:, lo_word].view(np.int32)  # views: no copies
    new = np.ones(n, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return ordered[new], order[new]


_CACHE: weakref.WeakKeyDictionary[EventTable, pd.DataFrame] = weakref.WeakKeyDictionary()


def gpu_ops(table: EventTable) -> pd.DataFrame:
    """One row per GPU op, sorted by (rank, ts_ns), with its launch and step. Shared: do not mutate.

    Columns: row, rank, device, stream, name_id, kind, category (categorical), ts_ns, dur_ns,
    launch_row (-1 none), api (categorical of LAUNCH_APIS, missing when unlinked), step (-1
    none), step_row (the ProfilerStep annotation's row, -1 none). Steps are attributed by
    `perfkit.analyzers.steps.profiler_steps.attribute_steps`. Derived columns are not stored (16-20 bytes per op):
    `op_ends(ops)` gives end_ns, `launch_times(table, ops, pos)` the launch call's start and
    duration, for the rows asked for.
    Integer columns are as narrow as their values (rank, device, stream, name_id, dur_ns as in
    the table; step and step_row as their values; row numbers int32 below 2**31 rows): cast
    before arithmetic that could leave their range (ts_ns is int64).
    """
    cached = _CACHE.get(table)
    if cached is not None:
        return cached
    gpu, launch = link_rows(table)
    order = _rank_ts_order(table, gpu)
    gpu, launch = gpu[order], launch[order]
    del order
    category = categorize(table, gpu)  # first: its temporaries come and go before the columns exist
    linked = launch >= 0
    lrow = np.maximum(launch, 0)
    ts = table["ts_ns"][gpu]
    dur = table["dur_ns"][gpu]  # as narrow as the table's (sums promote; ts + dur is int64)
    when = table["ts_ns"][lrow]  # the launch call's start, else the op's: what steps are attributed by
    when[~linked] = ts[~linked]
    del lrow
    rank = table["rank"][gpu]
    step, step_row = attribute_steps(table, step_windows(table), launch, rank, when)
    del when
    step_row = narrowest(step_row)  # all -1 without ProfilerSteps: one byte per op
    step = narrowest(step)
    df = pd.DataFrame(
        {
            "row": gpu,
            "rank": rank,
            "device": table["device"][gpu],
            "stream": table["stream"][gpu],
            "name_id": table["name_id"][gpu],
            "kind": table["kind"][gpu],
            "category": category,
            "ts_ns": ts,
            "dur_ns": dur,
            "launch_row": launch,
            "api": pd.Categorical.from_codes(_api_codes(table, launch), categories=pd.Index(list(LAUNCH_APIS))),
            "step": step,
            "step_row": step_row,
        },
        copy=False,
    )
    del gpu, launch, linked, ts, dur, step, step_row, category
    release_freed()
    _CACHE[table] = df
    return df


def _rank_ts_order(table: EventTable, gpu: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Positions of `gpu` rows in (rank, ts_ns) order, ties in row order: one rank at a time
    (temporaries of the rank's ops only)."""
    rank = table["rank"][gpu]
    out = np.empty(len(gpu), dtype=_index_dtype(table))
    at = 0
    for r in np.unique(rank).tolist():
        mine = np.flatnonzero(rank == r)
        ts = table["ts_ns"][gpu[mine]]
        o = np.argsort(ts, kind="stable")
        del ts
        out[at : at + len(mine)] = mine[o]
        at += len(mine)
    return out


def _api_codes(table: EventTable, launch: npt.NDArray[Any]) -> npt.NDArray[np.int8]:
    """Launch API code (index into LAUNCH_APIS) per GPU op, -1 when unlinked: each launch name
    classified once, the ops looked up block by block."""
    index = {api: i for i, api in enumerate(LAUNCH_APIS)}
    out = np.full(len(launch), -1, dtype=np.int8)
    name_id, n = table["name_id"], len(table.names)
    seen = np.zeros(n + 1, dtype=bool)  # the last: name id -1, read as Python reads names[-1]
    for lo, hi in blocks(len(launch)):
        rows = launch[lo:hi]
        seen[name_id[rows[rows >= 0]]] = True
    lut = np.full(n + 1, -1, dtype=np.int8)
    for i in np.flatnonzero(seen).tolist():
        lut[i] = index[launch_api(table.names[i if i < n else -1])]
    for lo, hi in blocks(len(launch)):
        rows = launch[lo:hi]
        linked = rows >= 0
        out[lo:hi][linked] = lut[name_id[rows[linked]]]
    return out


def op_ends(ops: pd.DataFrame) -> EndsOf:
    """End of each op of a `gpu_ops` frame (ts_ns + dur_ns, int64), computed for the rows asked for."""
    return EndsOf(ops["ts_ns"].to_numpy(), ops["dur_ns"].to_numpy())


def launch_times(table: EventTable, ops: pd.DataFrame, pos: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(start, duration) of the launch call of the ops at positions `pos` of a `gpu_ops` frame
    of `table`, int64, -1 for an op without one."""
    row = ops["launch_row"].to_numpy()[pos]
    linked = row >= 0
    safe = np.where(linked, row, 0)
    ts = table["ts_ns"][safe]
    dur = table["dur_ns"][safe].astype(np.int64)
    ts[~linked] = -1
    dur[~linked] = -1
    return ts, dur
