"""The collective a communication kernel belongs to, read from the NVTX range around its launch.

torch's NCCL process group wraps each call in an NVTX range named `nccl:<op>` (`nccl:all_reduce`,
`nccl:all_to_all`, `nccl:_allgather_base`, ...). NCCL runs some collectives as kernels named after
how they move data, not what they are (an all_to_all is `ncclDevKernel_SendRecv`), and an nsys
export has no `record_param_comms` args; the range says what the call was. A kernel belongs to the
innermost `nccl:` range open on its launching thread when it was launched (the range's rank and
thread, start <= launch start <= end). Kernels without a linked launch, or launched outside any
such range, belong to none.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.collectives.names import canonical_collective
from perfkit.analyzers.event_table import EventTable, Kind, member
from perfkit.analyzers.linking import link_rows

RANGE = re.compile(r"^nccl:(\w+)")


def enclosing_collective_ranges(table: EventTable, kernel_rows: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """For each of `kernel_rows`: the row of the `nccl:` range around its launch (-1: none), and
    the collective each range row names (by position in the returned names list: `names[i]` for
    the i-th kernel, "" when none)."""
    found = np.full(len(kernel_rows), -1, dtype=np.int64)
    ids = table.name_ids_matching(lambda name: RANGE.match(name) is not None) if len(table) else np.zeros(0, np.int32)
    if not len(ids) or not len(kernel_rows):
        return found, [""] * len(kernel_rows)
    ranges = np.flatnonzero((table["kind"] == Kind.USER_ANNOTATION) & member(table["name_id"], ids))
    gpu, launch = link_rows(table)
    launch_of = dict(zip(gpu.tolist(), launch.tolist(), strict=True))
    calls = np.array([launch_of.get(int(k), -1) for k in kernel_rows], dtype=np.int64)
    ok = calls >= 0
    rank, tid, ts, end = table["rank"], table["tid"], table["ts_ns"], table.end_ns
    for key in {(int(rank[r]), int(tid[r])) for r in ranges.tolist()}:
        mine = ranges[(rank[ranges] == key[0]) & (tid[ranges] == key[1])]
        mine = mine[np.lexsort((-end[mine], ts[mine]))]  # by start; of equal starts the outer first
        at = np.flatnonzero(ok & (rank[np.maximum(calls, 0)] == key[0]) & (tid[np.maximum(calls, 0)] == key[1]))
        _innermost(found, at, ts[calls[at]], mine, ts[mine], end[mine])
    return found, [_collective(table, r) for r in found.tolist()]


def _innermost(found: npt.NDArray[np.int64], at: npt.NDArray[Any], launch_ts: npt.NDArray[Any],
               rows: npt.NDArray[Any], starts: npt.NDArray[Any], ends: npt.NDArray[Any]) -> None:
    """found[at[i]] = the row of the innermost range open at launch_ts[i]: of the ranges started
    at or before it (`rows` by start, outer first on ties), the latest whose end is not before it.

    One sweep in time with a stack of open ranges: O((launches + ranges) log) in all, where walking
    back over every earlier range per launch grew with their product.
    """
    order = np.argsort(launch_ts, kind="stable")
    start_list, end_list, row_list = starts.tolist(), ends.tolist(), rows.tolist()
    stack: list[int] = []  # positions into rows, by start
    pushed = 0
    for i, t in zip(at[order].tolist(), launch_ts[order].tolist(), strict=True):
        while pushed < len(start_list) and start_list[pushed] <= t:
            stack.append(pushed)
            pushed += 1
        while stack and end_list[stack[-1]] < t:  # ended before this launch: before every later one too
            stack.pop()
        if stack:
            found[i] = row_list[stack[-1]]


def _collective(table: EventTable, row: int) -> str:
    m = RANGE.match(table.names[table["name_id"][row]]) if row >= 0 else None
    return canonical_collective(m.group(1)) if m else ""
