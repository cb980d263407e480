"""Share of the timed calls' time spent in collectives, per rank and over all ranks.

The windows are the ProfilerStep ranges, or where a torch build records none (CPU-only traces),
the `label` ranges profiler.trace_capture puts around each timed call. Per rank: the union of
the ops the analyzers categorize as communication (CPU ops such as c10d::allreduce_, the gloo
worker thread's gloo:all_reduce range, NCCL kernels), clipped to the rank's windows, over the
windows' total length. A share is None where a rank's windows have no length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.categories import category_of
from perfkit.analyzers.event_table import EventTable, Kind, member
from perfkit.analyzers.intervals import I64, intersection_ns, merge
from perfkit.analyzers.steps.profiler_steps import step_windows


@dataclass(frozen=True)
class CollectiveShare:
    by_rank: dict[int, float | None]  # rank -> collective time / window time
    overall: float | None  # every rank's collective time / every rank's window time


@dataclass(frozen=True)
class Windows:
    """The timed windows of every rank: one row per window."""

    rank: npt.NDArray[np.int64]
    start_ns: I64
    end_ns: I64


def timed_windows(table: EventTable, label: str) -> Windows:
    """ProfilerStep windows, or the `label` annotations where the trace has no ProfilerStep."""
    steps = step_windows(table)
    if len(steps):
        return Windows(steps["rank"].to_numpy(), steps["ts_ns"].to_numpy(), steps["end_ns"].to_numpy())
    rows = member(table["name_id"], table.name_ids_matching(lambda n: n == label)) & table.mask_kind(
        Kind.USER_ANNOTATION)
    return Windows(table["rank"][rows], table["ts_ns"][rows], table.end_ns[rows])


def communication_rows(table: EventTable) -> npt.NDArray[np.bool_]:
    """Rows whose name the categories call communication (a row without a name: no)."""
    by_name = np.asarray([category_of(n) == "communication" for n in table.names] + [False])
    mask: npt.NDArray[np.bool_] = by_name[table["name_id"]]
    return mask


def collective_share(table: EventTable, label: str) -> CollectiveShare:
    """Collective time inside the timed windows over the windows' length, per rank and overall."""
    w = timed_windows(table, label)
    comm = communication_rows(table)
    by_rank: dict[int, float | None] = {}
    total_comm_ns = total_window_ns = 0
    for rank in table.ranks:
        mine = w.rank == rank
        window = merge(w.start_ns[mine], w.end_ns[mine])
        rows = comm & (table["rank"] == rank)
        window_ns = int((window[1] - window[0]).sum())
        comm_ns = intersection_ns(merge(table["ts_ns"][rows], table.end_ns[rows]), window)
        by_rank[rank] = comm_ns / window_ns if window_ns else None
        total_comm_ns += comm_ns
        total_window_ns += window_ns
    return CollectiveShare(by_rank, total_comm_ns / total_window_ns if total_window_ns else None)
