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

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.categories import categorize
from analyzers.event_table import EventTable, Kind
from analyzers.steps import attribute_steps, step_windows
from perfkit.core.memory import release_freed

LAUNCH_APIS = ("kernel", "graph", "memcpy", "memset", "other")
_API_RULES = (
    ("graph", re.compile(r"graphlaunch", re.I)),
    ("memcpy", re.compile(r"memcpy", re.I)),
    ("memset", re.compile(r"memset", re.I)),
    ("kernel", re.compile(r"launch", re.I)),
)
_RANK_SHIFT = 44  # key = rank << 44 | correlation (correlation ids stay far below 2**44)


def launch_api(name: str) -> str:
    """What a runtime call enqueues: kernel / graph / memcpy / memset / other."""
    for api, pattern in _API_RULES:
        if pattern.search(name):
            return api
    return "other"


def link_rows(table: EventTable) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(gpu_rows, launch_rows): every GPU op row and its runtime call row (-1 when not traced)."""
    gpu = np.flatnonzero(table.gpu_mask())
    corr = table["correlation"]
    rt = np.flatnonzero(table.mask_kind(Kind.RUNTIME) & (corr > 0))
    rt_keys, first = np.unique(_keys(table, rt), return_index=True)
    launch = np.full(len(gpu), -1, dtype=np.int64)
    if len(rt_keys) and len(gpu):
        gkey = _keys(table, gpu)
        pos = np.searchsorted(rt_keys, gkey)
        posc = np.minimum(pos, len(rt_keys) - 1)
        hit = (rt_keys[posc] == gkey) & (corr[gpu] > 0)
        launch[hit] = rt[first[posc[hit]]]
    return gpu, launch


def _keys(table: EventTable, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Join key (rank << 44 | correlation) of `rows` (only those rows: no table-wide temporaries)."""
    return (table["rank"][rows].astype(np.int64) << _RANK_SHIFT) | np.maximum(table["correlation"][rows].astype(np.int64), 0)


_CACHE: weakref.WeakKeyDictionary[EventTable, pd.DataFrame] = weakref.WeakKeyDictionary()


def gpu_ops(table: EventTable) -> pd.DataFrame:
    """One row per GPU op, sorted by (rank, ts_ns), with its launch and step. Shared: do not mutate.

    Columns: row, rank, device, stream, name_id, kind, category (categorical), ts_ns, dur_ns,
    end_ns, launch_row (-1 none), launch_ts_ns, launch_dur_ns (-1 when unlinked), api (categorical
    of LAUNCH_APIS, missing when unlinked), step (-1 none), step_row (the ProfilerStep
    annotation's row, -1 none). Steps are attributed by `analyzers.steps.attribute_steps`.
    Integer columns are as narrow as their values (rank, device, stream as in the table; row
    numbers int32 below 2**31 rows): cast before arithmetic that could leave their range.
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
    dur = table["dur_ns"][gpu].astype(np.int64, copy=False)
    l_ts = np.where(linked, table["ts_ns"][lrow], -1)
    l_dur = np.where(linked, table["dur_ns"][lrow].astype(np.int64, copy=False), -1)
    del lrow
    rank = table["rank"][gpu]
    step, step_row = attribute_steps(table, step_windows(table), launch, rank, np.where(linked, l_ts, ts))
    step_row = step_row.astype(index_dt, copy=False)
    if len(step) == 0 or int(step.max()) < np.iinfo(np.int32).max:
        step = step.astype(np.int32)
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
