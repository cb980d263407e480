"""ProfilerStep windows and the step each GPU op belongs to.

Attribution rule (the same for the temporal breakdown, the ranges table's ProfilerStep rows,
launch statistics and skew): a GPU op launched by a thread that is inside a ProfilerStep range
of its own belongs to that range; a GPU op whose launch call has no enclosing ProfilerStep on
its thread (the autograd engine's backward thread, a communication thread) belongs to the
step window containing the launch on the same rank, whatever thread opened it; a GPU op
whose launch is not in the trace goes by its own start the same way.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind, member

STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")
WINDOW_COLUMNS = ("rank", "step", "ts_ns", "end_ns", "row", "pid", "tid")


def step_name_ids(table: EventTable) -> dict[int, int]:
    """{name id: step number} of the names spelled ProfilerStep#N."""
    return {i: int(m.group(1)) for i, n in enumerate(table.names) if (m := STEP_RE.match(n))}


def step_windows(table: EventTable) -> pd.DataFrame:
    """One row per ProfilerStep#N annotation: rank, step, ts_ns, end_ns, row, pid, tid (by rank, ts)."""
    ids = step_name_ids(table)
    if not ids:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in WINDOW_COLUMNS})
    step_lut = np.full(len(table.names), -1, dtype=np.int64)
    step_lut[list(ids)] = list(ids.values())
    rows = np.flatnonzero(table.mask_kind(Kind.USER_ANNOTATION) & member(table["name_id"], list(ids)))
    df = pd.DataFrame(
        {
            "rank": table["rank"][rows].astype(np.int64),
            "step": step_lut[table["name_id"][rows]],
            "ts_ns": table["ts_ns"][rows],
            "end_ns": table["ts_ns"][rows] + table["dur_ns"][rows],
            "row": rows.astype(np.int64),
            "pid": table["pid"][rows],
            "tid": table["tid"][rows],
        }
    )
    return df.sort_values(["rank", "ts_ns"], kind="stable").reset_index(drop=True)


def _enclosing(starts: npt.NDArray[Any], ends: npt.NDArray[Any], ts: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Index of the last window starting at or before each ts that still holds it, else -1."""
    k = np.searchsorted(starts, ts, side="right") - 1
    kk = np.maximum(k, 0)
    return np.where((k >= 0) & (ts < ends[kk]), kk, -1)


def attribute_steps(
    table: EventTable, windows: pd.DataFrame, launch_rows: npt.NDArray[Any], rank: npt.NDArray[Any], ts_ns: npt.NDArray[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(step number, ProfilerStep row) per GPU op; -1 where no step holds it (int64; int8 when
    the trace has no ProfilerStep at all).

    `launch_rows`: the op's launch call row (-1 when not traced); `ts_ns`: the launch start
    (the op's own start when not traced). See the module docstring for the rule.
    """
    n = len(ts_ns)
    if windows.empty or n == 0:  # no step anywhere: one byte per op
        return np.full(n, -1, dtype=np.int8), np.full(n, -1, dtype=np.int8)
    win = np.full(n, -1, dtype=np.int64)
    linked = launch_rows >= 0
    lrow = np.maximum(launch_rows, 0)
    l_pid = table["pid"][lrow]
    l_tid = table["tid"][lrow]
    for (r, pid, tid), w in windows.groupby(["rank", "pid", "tid"], sort=False):
        sel = np.flatnonzero(linked & (rank == r) & (l_pid == pid) & (l_tid == tid))
        if len(sel):
            k = _enclosing(w["ts_ns"].to_numpy(), w["end_ns"].to_numpy(), ts_ns[sel])
            win[sel[k >= 0]] = w.index.to_numpy()[k[k >= 0]]
    for r, w in windows.groupby("rank", sort=False):
        sel = np.flatnonzero((win < 0) & (rank == r))
        if len(sel):
            k = _enclosing(w["ts_ns"].to_numpy(), w["end_ns"].to_numpy(), ts_ns[sel])
            win[sel[k >= 0]] = w.index.to_numpy()[k[k >= 0]]
    found = win >= 0
    step = np.where(found, windows["step"].to_numpy()[np.maximum(win, 0)], -1)
    row = np.where(found, windows["row"].to_numpy()[np.maximum(win, 0)], -1)
    return step.astype(np.int64), row.astype(np.int64)

