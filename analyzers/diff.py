"""Trace diff: kernel-level added / removed / slower / faster between two traces, with totals.

op_diff is the same over CPU ops (a CPU-only trace has no kernels): each op name's inclusive
time (an op's time holds the ops it calls), so a new aten::copy_ under aten::linear shows both
as the copy's own row and as a slower aten::linear.

Kernels are matched by exact name (memcpy / memset by their names, e.g. "Memcpy HtoD
(Pinned -> Device)"). A kernel present in both is "slower" / "faster" when its total time
changed by more than `rel_tol` (default 5%) AND by more than `abs_tol_ns` (default 1 us),
else "unchanged". Totals: one row per status plus "all", with the time of A, of B, and B - A.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.kernel_summary import kernel_summary

DIFF_COLUMNS = [
    "name", "category", "status", "count_a", "count_b", "total_a_ns", "total_b_ns", "delta_ns",
    "delta_pct", "mean_a_ns", "mean_b_ns",
]  # fmt: skip
STATUSES = ("added", "removed", "slower", "faster", "unchanged")


def cpu_op_summary(table: EventTable) -> pd.DataFrame:
    """One row per CPU op name: name, category ("cpu op"), count, total_ns (inclusive), mean_ns."""
    rows = np.flatnonzero(table.mask_kind(Kind.CPU_OP))
    ops = pd.DataFrame({"name_id": table["name_id"][rows], "dur_ns": table["dur_ns"][rows].astype(np.int64)})
    g = ops.groupby("name_id", sort=False)["dur_ns"].agg(["size", "sum"])
    names = table.name_of(g.index.to_numpy())
    return pd.DataFrame({"name": names, "category": "cpu op", "count": g["size"].to_numpy(),
                         "total_ns": g["sum"].to_numpy(), "mean_ns": g["sum"].to_numpy() / g["size"].to_numpy()})


def trace_diff(a: EventTable, b: EventTable, rel_tol: float = 0.05, abs_tol_ns: int = 1000) -> pd.DataFrame:
    """One row per kernel name in A or B, sorted by |delta_ns|."""
    return _diff(kernel_summary(a), kernel_summary(b), rel_tol, abs_tol_ns)


def op_diff(a: EventTable, b: EventTable, rel_tol: float = 0.05, abs_tol_ns: int = 1000) -> pd.DataFrame:
    """One row per CPU op name in A or B (inclusive times), sorted by |delta_ns|; columns as trace_diff."""
    return _diff(cpu_op_summary(a), cpu_op_summary(b), rel_tol, abs_tol_ns)


def _diff(sa: pd.DataFrame, sb: pd.DataFrame, rel_tol: float, abs_tol_ns: int) -> pd.DataFrame:
    ka = sa.set_index("name")
    kb = sb.set_index("name")
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


def diff_by_level(a: EventTable, b: EventTable) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """("kernel", trace_diff, its totals) when A or B has GPU kernels (memcpy, memset); else
    ("op", op_diff, its totals counted in `ops`): two CPU-only traces diff their CPU ops."""
    kernels = trace_diff(a, b)
    if not kernels.empty:
        return "kernel", kernels, diff_totals(kernels)
    ops = op_diff(a, b)
    return "op", ops, diff_totals(ops, counted="ops")


def diff_totals(diff: pd.DataFrame, counted: str = "kernels") -> pd.DataFrame:
    """Per status (and "all"): kernels (or ops: `counted`), time in A, time in B, delta."""
    g = diff.groupby("status").agg(
        **{counted: ("name", "size")}, total_a_ns=("total_a_ns", "sum"), total_b_ns=("total_b_ns", "sum")
    )
    g = g.reindex(list(STATUSES), fill_value=0)
    g.loc["all"] = [len(diff), int(diff["total_a_ns"].sum()), int(diff["total_b_ns"].sum())]
    g["delta_ns"] = g["total_b_ns"] - g["total_a_ns"]
    g["delta_pct"] = 100.0 * g["delta_ns"] / g["total_a_ns"].where(g["total_a_ns"] > 0)
    return g.reset_index(names="status")
