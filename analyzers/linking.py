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
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.categories import categorize
from analyzers.event_table import EventTable, Kind, narrowest
from analyzers.steps import attribute_steps, step_windows
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


def link_rows(table: EventTable) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(gpu_rows, launch_rows): every GPU op row and its runtime call row (-1 when not traced;
    of several calls with the op's correlation id on its rank, the first).

    Memory: one rank at a time, keys as narrow as the correlation column (no table-wide int64
    keys and no np.unique copies: ~30 bytes per runtime call of the rank at the peak)."""
    gpu = np.flatnonzero(table.gpu_mask())
    launch = np.full(len(gpu), -1, dtype=np.int64)
    corr, rank = table["correlation"], table["rank"]
    calls = table.mask_kind(Kind.RUNTIME)
    calls &= corr > 0
    gpu_rank = rank[gpu]
    for r in np.unique(gpu_rank).tolist():
        rt = np.flatnonzero(calls & (rank == r))
        if len(rt) == 0:
            continue
        keys, first = _first_of_each(corr[rt])
        rt = rt[first]
        del first
        mine = np.flatnonzero(gpu_rank == r)
        gkey = corr[gpu[mine]]
        pos = np.searchsorted(keys, gkey)
        np.minimum(pos, len(keys) - 1, out=pos)
        hit = (keys[pos] == gkey) & (gkey > 0)
        launch[mine[hit]] = rt[pos[hit]]
    return gpu, launch


def _first_of_each(keys: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """(sorted distinct keys, position of each one's first occurrence in `keys`)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return ordered[new], order[new]


_CACHE: weakref.WeakKeyDictionary[EventTable, pd.DataFrame] = weakref.WeakKeyDictionary()


def gpu_ops(table: EventTable) -> pd.DataFrame:
    """One row per GPU op, sorted by (rank, ts_ns), with its launch and step. Shared: do not mutate.

    Columns: row, rank, device, stream, name_id, kind, category (categorical), ts_ns, dur_ns,
    end_ns, launch_row (-1 none), launch_ts_ns, launch_dur_ns (-1 when unlinked), api (categorical
    of LAUNCH_APIS, missing when unlinked), step (-1 none), step_row (the ProfilerStep
    annotation's row, -1 none). Steps are attributed by `analyzers.steps.attribute_steps`.
    Integer columns are as narrow as their values (rank, device, stream, dur_ns, launch_dur_ns as
    in the table; step as its values; row numbers int32 below 2**31 rows): cast before arithmetic
    that could leave their range (ts_ns, end_ns and launch_ts_ns are int64).
    """
    cached = _CACHE.get(table)
    if cached is not None:
        return cached
    gpu, launch = link_rows(table)
    order = np.lexsort((table["ts_ns"][gpu], table["rank"][gpu]))
    index_dt = np.int32 if len(table) < np.iinfo(np.int32).max else np.int64  # row numbers
    gpu, launch = gpu[order].astype(index_dt, copy=False), launch[order].astype(index_dt, copy=False)
    del order
    category = categorize(table, gpu)  # first: its temporaries come and go before the columns exist
    linked = launch >= 0
    lrow = np.maximum(launch, 0)
    ts = table["ts_ns"][gpu]
    dur = table["dur_ns"][gpu]  # as narrow as the table's (sums promote; ts + dur is int64)
    l_ts = np.where(linked, table["ts_ns"][lrow], -1)
    l_dur = table["dur_ns"][lrow]
    l_dur[~linked] = -1
    del lrow
    rank = table["rank"][gpu]
    step, step_row = attribute_steps(table, step_windows(table), launch, rank, np.where(linked, l_ts, ts))
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
            "end_ns": ts + dur,
            "launch_row": launch,
            "launch_ts_ns": l_ts,
            "launch_dur_ns": l_dur,
            "api": pd.Categorical.from_codes(_api_codes(table, launch), categories=pd.Index(list(LAUNCH_APIS))),
            "step": step,
            "step_row": step_row,
        },
        copy=False,
    )
    del gpu, launch, linked, ts, dur, l_ts, l_dur, step, step_row, category
    release_freed()
    _CACHE[table] = df
    return df


def _api_codes(table: EventTable, launch: npt.NDArray[np.int64]) -> npt.NDArray[np.int8]:
    """Launch API code (index into LAUNCH_APIS) per GPU op, -1 when unlinked."""
    index = {api: i for i, api in enumerate(LAUNCH_APIS)}
    out = np.full(len(launch), -1, dtype=np.int8)
    linked = launch >= 0
    inverse, uniq = pd.factorize(table["name_id"][launch[linked]])
    lut = np.asarray([index[launch_api(table.names[i])] for i in uniq], dtype=np.int8)
    if len(uniq):
        out[linked] = lut[inverse]
    return out
