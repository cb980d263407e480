"""The placement table: every point / kernel with a known cost placed under every roof.

Input tables have one row per point or kernel with `time_s`, `flop`, `dtype` and bytes moved:
`bytes` (an analytic cost: minimal bytes, i.e. the DRAM level) or `bytes_dram`, `bytes_l2`,
`bytes_l1` (measured by Nsight Compute: a hierarchical roofline). Output columns:

- intensity_<level>, achieved_flop_per_s, achieved_bytes_per_s (outermost level), and per roof
  label R ("measured", "datasheet"): peak_flop_per_s_R, attainable_flop_per_s_R,
  pct_of_roof_R, bound_R (memory / compute), bound_level_R (dram / l2 / l1 / compute), ridge_R;
- decode steps (kind "decode"): mbu_R = achieved bytes/s / bandwidth, mfu_R = achieved
  flop/s / peak.
Pure functions of DataFrames and roofs; no I/O, no plotting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from perfkit.core.record import STATUS_OK, Run
from perfkit.roofline.model import LEVELS, Roof, intensity
from perfkit.roofline.units import UnitError, normalize_dtype

DTYPE_PARAM_KEYS: tuple[str, ...] = ("dtype", "compute_dtype", "weight_dtype", "precision")
DEFAULT_DTYPE = "fp32"
DECODE_KINDS: frozenset[str] = frozenset({"decode"})


def as_roofs(ceilings: Mapping[str, Roof] | Sequence[Roof] | Roof) -> dict[str, Roof]:
    if isinstance(ceilings, Roof):
        return {ceilings.label: ceilings}
    if isinstance(ceilings, Mapping):
        return dict(ceilings)
    return {r.label: r for r in ceilings}


def point_dtype(params: Mapping[str, Any]) -> str:
    """The compute dtype of a point from its params; fp32 (torch's default) when unnamed."""
    for key in DTYPE_PARAM_KEYS:
        value = params.get(key)
        if value:
            try:
                return normalize_dtype(str(value))
            except UnitError:
                return str(value)
    return DEFAULT_DTYPE


def point_table(run: Run) -> pd.DataFrame:
    """One row per ok point with a cost and a median time."""
    rows = []
    for p in run.points:
        med = p.median_s
        if p.status != STATUS_OK or p.cost is None or not med:
            continue
        rows.append(
            {
                "key": p.key,
                "kind": p.kind,
                "workload": p.workload,
                "dtype": point_dtype(p.params),
                "time_s": float(med),
                "flop": float(p.cost.flop),
                "bytes": float(p.cost.bytes),
            }
        )
    return pd.DataFrame(rows, columns=["key", "kind", "workload", "dtype", "time_s", "flop", "bytes"])


def place_points(run: Run, ceilings: Mapping[str, Roof] | Sequence[Roof] | Roof) -> pd.DataFrame:
    """The placement table of a run's points (see the module docstring for the columns)."""
    return place_table(point_table(run), ceilings)


def place_kernels(kernels: pd.DataFrame, ceilings: Mapping[str, Roof] | Sequence[Roof] | Roof) -> pd.DataFrame:
    """Place a kernel table (name, time_s, flop, dtype, bytes_dram / bytes_l2 / bytes_l1)."""
    return place_table(kernels, ceilings)


def level_bytes_columns(table: pd.DataFrame) -> dict[str, str]:
    """level -> column holding its bytes; a plain `bytes` column is the DRAM level."""
    out = {lv: f"bytes_{lv}" for lv in LEVELS if f"bytes_{lv}" in table.columns}
    if not out and "bytes" in table.columns:
        out["dram"] = "bytes"
    return out


def place_table(table: pd.DataFrame, ceilings: Mapping[str, Roof] | Sequence[Roof] | Roof) -> pd.DataFrame:
    roofs = as_roofs(ceilings)
    out = table.copy()
    levels = level_bytes_columns(table)
    for column in ("time_s", "flop", "dtype"):
        if column not in table.columns:
            raise ValueError(f"placement needs a {column!r} column; got {list(table.columns)}")
    time_s = table["time_s"].astype(float)
    outer = next(iter(levels), None)
    for level, column in levels.items():
        out[f"intensity_{level}"] = [_intensity(f, b) for f, b in zip(table["flop"], table[column], strict=True)]
    out["achieved_flop_per_s"] = table["flop"].astype(float) / time_s
    out["achieved_bytes_per_s"] = table[levels[outer]].astype(float) / time_s if outer else math.nan
    decode = table["kind"].isin(DECODE_KINDS) if "kind" in table.columns else pd.Series(False, index=table.index)
    for label, roof in roofs.items():
        placed = [
            roof.place(
                float(row["flop"]),
                {lv: float(row[col]) for lv, col in levels.items() if not _isnan(row[col])},
                str(row["dtype"]),
                float(row["time_s"]),
            )
            for _, row in table.iterrows()
        ]
        out[f"peak_flop_per_s_{label}"] = [p.peak_flop_per_s for p in placed]
        out[f"attainable_flop_per_s_{label}"] = [p.attainable_flop_per_s for p in placed]
        out[f"pct_of_roof_{label}"] = [p.pct_of_roof for p in placed]
        out[f"bound_{label}"] = [p.bound for p in placed]
        out[f"bound_level_{label}"] = [p.bound_level for p in placed]
        out[f"ridge_{label}"] = [p.ridge for p in placed]
        bw = roof.bandwidth("dram") or math.nan
        out[f"mbu_{label}"] = (out["achieved_bytes_per_s"] / bw).where(decode, math.nan)
        out[f"mfu_{label}"] = (out["achieved_flop_per_s"] / out[f"peak_flop_per_s_{label}"]).where(decode, math.nan)
    return out


def _intensity(flop: float, nbytes: float) -> float:
    return math.nan if _isnan(nbytes) else intensity(float(flop), float(nbytes))


def _isnan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True

