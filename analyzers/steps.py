"""ProfilerStep windows and step assignment (a CPU timestamp falls in step N's window)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzers.event_table import EventTable, Kind

STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)$")


def step_windows(table: EventTable) -> pd.DataFrame:
    """One row per ProfilerStep#N annotation: rank, step, ts_ns, end_ns (sorted)."""
    ids = {i: int(m.group(1)) for i, n in enumerate(table.names) if (m := STEP_RE.match(n))}
    if not ids:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("rank", "step", "ts_ns", "end_ns")})
    step_lut = np.full(len(table.names), -1, dtype=np.int64)
    step_lut[list(ids)] = list(ids.values())
    rows = np.flatnonzero(table.mask_kind(Kind.USER_ANNOTATION) & (step_lut[table["name_id"]] >= 0))
    df = pd.DataFrame(
        {
            "rank": table["rank"][rows].astype(np.int64),
            "step": step_lut[table["name_id"][rows]],
            "ts_ns": table["ts_ns"][rows],
            "end_ns": table["ts_ns"][rows] + table["dur_ns"][rows],
        }
    )
    return df.sort_values(["rank", "ts_ns"], kind="stable").reset_index(drop=True)


def assign_steps(windows: pd.DataFrame, rank: npt.NDArray[Any], ts_ns: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Step number whose window holds each (rank, ts); -1 outside every window."""
    out = np.full(len(ts_ns), -1, dtype=np.int64)
    if windows.empty or len(ts_ns) == 0:
        return out
    for r, w in windows.groupby("rank", sort=False):
        sel = np.flatnonzero(rank == r)
        if len(sel) == 0:
            continue
        starts = w["ts_ns"].to_numpy()
        k = np.searchsorted(starts, ts_ns[sel], side="right") - 1
        kk = np.maximum(k, 0)
        inside = (k >= 0) & (ts_ns[sel] < w["end_ns"].to_numpy()[kk])
        out[sel[inside]] = w["step"].to_numpy()[kk[inside]]
    return out
