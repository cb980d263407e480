"""Collectives placed against the inter-GPU link: busbw / link bandwidth, and the regime.

A `kind: collectives` point records nccl-tests' two bandwidths (workloads/collectives/cost.py):
algbw = message bytes / time and busbw = algbw x the op's bus factor (2(n-1)/n for all_reduce,
...). busbw is a per-direction number: what each rank moves over its link in one direction, so
it is compared with the link bandwidth of one GPU PER DIRECTION (devices.yaml `link`: half the
bidirectional total datasheets print; 450 GB/s for NVLink 4 on H100 SXM).

The roof is the datasheet's: `perfkit calibrate` measures no link, so a calibration changes
nothing here (a note says so). A CPU run (gloo through shared memory) and a device without a
`link` entry get busbw alone and a note, no error.

Regime, per series of points with the same op and world size (dtypes pooled: sizes are bytes):
a point is latency-bound when its busbw is below half the series' best busbw, bandwidth-bound
otherwise. Under time = latency + bytes / bandwidth this is Hockney's half-performance size n1/2:
below it the fixed cost is more than half the time, so the time hardly grows with the size.
A series with a single size gets no regime ("-"); a sweep that never leaves the latency regime
calls its largest sizes bandwidth-bound (the rule is relative to the series' best).
Pure functions of a Run and a DeviceSpec; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from perfkit.core.record import STATUS_OK, Run
from perfkit.roofline.devices import DeviceSpec

COLLECTIVE_KIND = "collectives"
REGIME_LATENCY = "latency"
REGIME_BANDWIDTH = "bandwidth"
HALF_BEST = 0.5  # latency-bound below this fraction of the series' best busbw (n1/2)
COLUMNS = ["key", "op", "dtype", "size_bytes", "world_size", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s"]


@dataclass(frozen=True)
class LinkRoof:
    """The link bandwidth of one GPU, per direction, and where the number comes from."""

    bytes_per_s: float
    fabric: str
    device: str
    source: str
    label: str = "datasheet"

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "bytes_per_s": self.bytes_per_s, "fabric": self.fabric,
                "device": self.device, "source": self.source, "direction": "per direction (unidirectional)"}


@dataclass(frozen=True)
class LinkPlacement:
    table: pd.DataFrame  # COLUMNS + link_bytes_per_s, pct_of_link, regime
    roof: LinkRoof | None
    notes: tuple[str, ...] = field(default_factory=tuple)


def collective_table(run: Run) -> pd.DataFrame:
    """One row per ok collectives point with a busbw (see COLUMNS)."""
    rows = []
    for p in run.points:
        busbw = p.metrics.get("busbw_bytes_per_s")
        if p.kind != COLLECTIVE_KIND or p.status != STATUS_OK or not p.median_s or busbw is None:
            continue
        rows.append({
            "key": p.key,
            "op": str(p.params.get("op", "")),
            "dtype": str(p.params.get("dtype", "")),
            "size_bytes": float(p.params.get("message_bytes", p.params.get("size_bytes", math.nan))),
            "world_size": int(p.metrics.get("world_size") or 0),
            "time_s": float(p.median_s),
            "algbw_bytes_per_s": float(p.metrics.get("algbw_bytes_per_s", math.nan)),
            "busbw_bytes_per_s": float(busbw),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def link_roof(spec: DeviceSpec | None) -> LinkRoof | None:
    """The datasheet link roof of a device; None for a CPU, an unknown device or no `link` entry."""
    if spec is None or spec.kind == "cpu" or not spec.link_bytes_per_s:
        return None
    return LinkRoof(bytes_per_s=spec.link_bytes_per_s, fabric=spec.link_fabric, device=spec.name,
                    source=f"devices.yaml: {spec.key}.link ({spec.source('link')})")


def regimes(table: pd.DataFrame) -> list[str]:
    """latency | bandwidth per row (the module docstring's rule); "" for a single-size series."""
    out = [""] * len(table)
    if table.empty:
        return out
    rows = table.reset_index(drop=True)
    for _, group in rows.groupby(["op", "world_size"], sort=False):
        if group["size_bytes"].nunique() < 2:
            continue
        best = float(group["busbw_bytes_per_s"].max())
        for position, busbw in zip(group.index, group["busbw_bytes_per_s"], strict=True):
            out[int(position)] = REGIME_LATENCY if float(busbw) < HALF_BEST * best else REGIME_BANDWIDTH
    return out


def place_collectives(run: Run, spec: DeviceSpec | None, device_kind: str, device_name: str,
                      calibrated: bool = False) -> LinkPlacement:
    """Every collectives point of `run` against the link roof of `spec` (None: unknown device)."""
    table = collective_table(run).reset_index(drop=True)
    roof = link_roof(spec)
    link = roof.bytes_per_s if roof else math.nan
    table["link_bytes_per_s"] = link
    table["pct_of_link"] = 100.0 * table["busbw_bytes_per_s"] / link if roof else math.nan
    table["regime"] = regimes(table)
    notes: list[str] = []
    if table.empty:
        return LinkPlacement(table, roof, ())
    if device_kind == "cpu":
        notes.append("CPU: the ranks exchange data through shared memory (gloo): no link roof, busbw shown alone")
    elif roof is None:
        notes.append(f"no link bandwidth for {device_name} in roofline/devices.yaml: busbw shown without a link "
                     "roof (add a `link:` entry with its source)")
    else:
        if calibrated:
            notes.append("the calibration measures no link (perfkit calibrate does not): the datasheet link roof "
                         "is used")
        over = int((table["pct_of_link"] > 100.0).sum())
        if over:
            notes.append(f"{over} collective(s) above 100% of the {roof.fabric} roof: a faster path than the "
                         "datasheet link (an NVLink bridge on PCIe cards, in-switch reduction) or a short timing")
    nproc = _nproc(run.spec)
    wide = int(table["world_size"].max())
    if nproc and wide > nproc:
        notes.append(f"world size {wide} over {nproc} rank(s) per node: the ranks span nodes; the link roof is "
                     "intra-node and the network between nodes (not in devices.yaml) may bind")
    return LinkPlacement(table, roof, tuple(notes))


def _nproc(spec: Mapping[str, Any]) -> int | None:
    launch = spec.get("launch") if isinstance(spec, Mapping) else None
    value = launch.get("nproc") if isinstance(launch, Mapping) else None
    return int(value) if isinstance(value, int) and value > 0 else None
