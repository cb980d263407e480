"""Trace diff: kernel-level added / removed / slower / faster between two traces, with totals.

Kernels are matched by exact name (memcpy / memset by their names, e.g. "Memcpy HtoD
(Pinned -> Device)"). A kernel present in both is "slower" / "faster" when its total time
changed by more than `rel_tol` (default 5%) AND by more than `abs_tol_ns` (default 1 us),
else "unchanged". Totals: one row per status plus "all", with the time of A, of B, and B - A.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.kernel_summary import kernel_summary

DIFF_COLUMNS = [
    "name", "category", "status", "count_a", "count_b", "total_a_ns", "total_b_ns", "delta_ns",
    "delta_pct", "mean_a_ns", "mean_b_ns",
]  # fmt: skip
STATUSES = ("added", "removed", "slower", "faster", "unchanged")


def trace_diff(a: EventTable, b: EventTable, rel_tol: float = 0.05, abs_tol_ns: int = 1000) -> pd.DataFrame:
    """One row per kernel name in A or B, sorted by |delta_ns|."""
    ka = kernel_summary(a).set_index("name")
    kb = kernel_summary(b).set_index("name")
    names = ka.index.union(kb.index, sort=False)
    out = pd.DataFrame(index=names)
    out["category"] = kb["category"].reindex(names).fillna(ka["category"].reindex(names))
    out["count_a"] = ka["count"].reindex(names).fillna(0).astype(np.int64)
    out["count_b"] = kb["count"].reindex(names).fillna(0).astype(np.int64)
    out["total_a_ns"] = ka["total_ns"].reindex(names).fillna(0).astype(np.int64)
    out["total_b_ns"] = kb["total_ns"].reindex(names).fillna(0).astype(np.int64)
    out["mean_a_ns"] = ka["mean_ns"].reindex(names)
    out["mean_b_ns"] = kb["mean_ns"].reindex(names)
    out["delta_ns"] = out["total_b_ns"] - out["total_a_ns"]
    out["delta_pct"] = 100.0 * out["delta_ns"] / out["total_a_ns"].where(out["total_a_ns"] > 0)
    changed = (out["delta_ns"].abs() > abs_tol_ns) & (out["delta_ns"].abs() > rel_tol * out["total_a_ns"])
    status = np.where(
        out["count_a"] == 0,
        "added",
        np.where(
            out["count_b"] == 0,
            "removed",
            np.where(changed & (out["delta_ns"] > 0), "slower", np.where(changed, "faster", "unchanged")),
        ),
    )
    out["status"] = status
    out = out.reset_index(names="name")
    order = out["delta_ns"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order, DIFF_COLUMNS].reset_index(drop=True)


def diff_totals(diff: pd.DataFrame) -> pd.DataFrame:
    """Per status (and "all"): kernels, time in A, time in B, delta."""
    g = diff.groupby("status").agg(
        kernels=("name", "size"), total_a_ns=("total_a_ns", "sum"), total_b_ns=("total_b_ns", "sum")
    )
    g = g.reindex(list(STATUSES), fill_value=0)
    g.loc["all"] = [len(diff), int(diff["total_a_ns"].sum()), int(diff["total_b_ns"].sum())]
    g["delta_ns"] = g["total_b_ns"] - g["total_a_ns"]
    g["delta_pct"] = 100.0 * g["delta_ns"] / g["total_a_ns"].where(g["total_a_ns"] > 0)
    return g.reset_index(names="status")
