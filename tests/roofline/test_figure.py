"""The roofline figure: log-log axes, ceilings per dtype and level, ridges, points by workload."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from perfkit.roofline.calibration import Calibration
from perfkit.roofline.ceilings import roofs_for
from perfkit.roofline.figure import axis_range, roofline_figure
from perfkit.roofline.place import place_kernels


def _placed(h100_calibration: Calibration) -> tuple[pd.DataFrame, dict]:
    roofs = roofs_for(h100_calibration.device, h100_calibration)
    table = pd.DataFrame(
        {
            "key": ["gemm/a", "gemm/b", "norm/c"],
            "workload": ["gemm", "gemm", "rmsnorm"],
            "kind": ["gemm", "gemm", "norm"],
            "dtype": ["bf16", "bf16", "bf16"],
            "time_s": [1.5e-3, 2e-5, 1e-4],
            "flop": [1.1e12, 3.4e7, 4.0e7],
            "bytes": [4.0e8, 4.0e5, 8.0e7],
        }
    )
    return place_kernels(table, roofs), roofs


def test_figure_structure(h100_calibration: Calibration) -> None:
    placed, roofs = _placed(h100_calibration)
    fig = roofline_figure(placed, roofs, title="t")
    assert isinstance(fig, go.Figure)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    # memory ceilings: measured DRAM and L2 (solid), datasheet DRAM (dashed)
    assert any(n.startswith("DRAM / HBM 3 TB/s (measured)") for n in names)
    assert any(n.startswith("L2 9 TB/s (measured)") for n in names)
    assert any(n.startswith("DRAM / HBM 3.35 TB/s (datasheet)") for n in names)
    # compute ceilings: the points' dtype (bf16) and each roof's top peak (fp8 on the datasheet)
    assert "bf16 798 TFLOP/s (measured)" in names
    assert "bf16 990 TFLOP/s (datasheet)" in names
    assert "fp8 1.98 PFLOP/s (datasheet)" in names
    dashes = {t.name: t.line.dash for t in fig.data if t.mode == "lines"}
    assert dashes["bf16 798 TFLOP/s (measured)"] == "solid"
    assert dashes["bf16 990 TFLOP/s (datasheet)"] == "dash"
    ridges = [t for t in fig.data if (t.name or "").startswith("ridge bf16 (measured)")]
    assert len(ridges) == 1 and ridges[0].x[0] == 798e12 / 3.0e12
    # points: one trace per workload, hover with the placement
    gemm = next(t for t in fig.data if t.name == "gemm")
    assert len(gemm.x) == 2
    assert list(gemm.marker.symbol) == ["square", "square"]  # bf16
    assert "% of roof" in gemm.text[0] and "compute-bound" in gemm.text[0]
    assert next(t for t in fig.data if t.name == "rmsnorm").text[0].count("memory-bound") == 2


def test_measured_ceiling_meets_memory_line_at_ridge(h100_calibration: Calibration) -> None:
    placed, roofs = _placed(h100_calibration)
    fig = roofline_figure(placed, roofs)
    dram = next(t for t in fig.data if (t.name or "").startswith("DRAM / HBM 3 TB/s (measured)"))
    assert dram.y[-1] == max(roofs["measured"].peak_flop_per_s.values())


def test_axis_range_covers_points_and_ridges(h100_calibration: Calibration) -> None:
    placed, roofs = _placed(h100_calibration)
    lo, hi = axis_range(placed, list(roofs.values()))
    assert lo <= placed["intensity_dram"].min() / 10 + 1e-12
    assert hi >= 1979e12 / 3.35e12


def test_empty_table_draws_only_ceilings(h100_calibration: Calibration) -> None:
    roofs = roofs_for(h100_calibration.device, h100_calibration)
    empty = pd.DataFrame(columns=["key", "dtype", "time_s", "flop", "bytes"])
    fig = roofline_figure(place_kernels(empty, roofs), roofs)
    assert all(t.mode in ("lines", "markers") for t in fig.data)
    assert any("fp32" in (t.name or "") for t in fig.data)  # no points: every dtype drawn
