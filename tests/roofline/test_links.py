"""Collectives against the link roof: the datasheet links, the placement, and `perfkit roofline`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.cost import Cost
from perfkit.core.env import CpuState, DeviceProperties, Env, Versions
from perfkit.core.measurement import Measurement
from perfkit.core.record import STATUS_FAILED, STATUS_OK, PointResult, Run
from perfkit.roofline.calibration import Calibration, save
from perfkit.roofline.devices import device_table, lookup
from perfkit.roofline.links import (
    REGIME_BANDWIDTH,
    REGIME_LATENCY,
    link_roof,
    place_collectives,
    regimes,
)

REPO = Path(__file__).resolve().parents[2]
LATENCY_S = 20e-6
WIRE_BYTES_PER_S = 400e9  # the per-direction rate of the constructed H100 ring
H100_ENV = Env(
    cpu=CpuState(model="x"),
    device=DeviceProperties(type="cuda", name="NVIDIA H100 80GB HBM3", capability="9.0", sm_count=132,
                            memory_bytes=85_045_395_456, l2_bytes=52_428_800),
    versions=Versions(torch="2.5.1", cuda="12.4"),
)


def _collective(op: str, size: int, n: int, time_s: float, dtype: str = "bf16", status: str = STATUS_OK) -> PointResult:
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    return PointResult(
        key=f"collectives/nccl/op={op},dtype={dtype},size_bytes={size}", kind="collectives", workload="nccl",
        params={"op": op, "dtype": dtype, "size_bytes": size}, status=status,
        measurement=Measurement((time_s,) * 5, 1, "converged", "cuda_event", 0.01),
        cost=Cost(float(size), 2.0 * size),
        metrics={"algbw_bytes_per_s": size / time_s, "busbw_bytes_per_s": size / time_s * factor,
                 "bus_factor": factor, "world_size": n},
    )


def _ring(op: str = "all_reduce", n: int = 8) -> tuple[PointResult, ...]:
    """time = latency + bus bytes / wire rate: busbw climbs to the wire rate at large sizes."""
    factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
    return tuple(_collective(op, s, n, LATENCY_S + s * factor / WIRE_BYTES_PER_S) for s in (8, 2**16, 2**24, 2**30))


def _run(points: tuple[PointResult, ...], device: str = "cuda", env: Env = H100_ENV, nproc: int = 8) -> Run:
    return Run(run_id="20250110-120000-abcdef", created="2025-01-10T12:00:00+00:00", status="complete",
               spec={"launch": {"nproc": nproc}}, spec_hash="h", spec_path="c.yaml", device=device, env=env,
               points=points)


def _write(tmp_path: Path, run: Run) -> Path:
    run_dir = tmp_path / "runs" / run.run_id
    write_json_atomic(run_dir / "run.json", to_builtins(run))
    return run_dir


def test_every_gpu_has_a_sourced_per_direction_link() -> None:
    expected_gb_per_s = {"h100-sxm": 450, "h200-sxm": 450, "a100-sxm-80gb": 300, "h100-pcie": 64, "l40s": 32,
                         "l4": 32, "b200": 900, "mi300x": 448}
    table = device_table()
    for key, gb in expected_gb_per_s.items():
        spec = table[key]
        assert spec.link_bytes_per_s == pytest.approx(gb * 1e9), key
        assert "https://" in spec.source("link") and "halved: per direction" in spec.source("link"), key
        assert spec.link_fabric, key
    assert "NVLink bridge" in table["h100-pcie"].source("link")
    assert table["cpu"].link_bytes_per_s is None and link_roof(table["cpu"]) is None


def test_regime_is_half_the_best_busbw_of_its_series() -> None:
    placed = place_collectives(_run(_ring()), lookup("NVIDIA H100 80GB HBM3"), "cuda", "H100").table
    # n1/2 = latency x wire rate = 8 MB of bus traffic: 8 B and 64 KiB below, 16 MiB and 1 GiB above
    assert list(placed["regime"]) == [REGIME_LATENCY, REGIME_LATENCY, REGIME_BANDWIDTH, REGIME_BANDWIDTH]
    single = place_collectives(_run((_collective("broadcast", 2**20, 8, 1e-4),)), None, "cuda", "x").table
    assert list(single["regime"]) == [""]  # one size: no series to judge by
    assert regimes(single.iloc[0:0]) == []


def test_h100_collectives_against_nvlink() -> None:
    points = (*_ring(), *_ring("all_gather"), _collective("all_reduce", 2**20, 8, 1.0, status=STATUS_FAILED))
    placement = place_collectives(_run(points), lookup("NVIDIA H100 80GB HBM3"), "cuda", "NVIDIA H100 80GB HBM3")
    assert placement.roof is not None and placement.roof.fabric == "NVLink 4"
    assert placement.roof.bytes_per_s == pytest.approx(450e9)
    table = placement.table
    assert len(table) == 8  # the failed point is left out
    big = table[table["size_bytes"] == 2**30].iloc[0]
    assert big["busbw_bytes_per_s"] == pytest.approx(WIRE_BYTES_PER_S, rel=0.01)
    assert big["pct_of_link"] == pytest.approx(100 * big["busbw_bytes_per_s"] / 450e9)
    assert 85 < big["pct_of_link"] < 89
    assert placement.notes == ()  # no calibration, nothing above the roof, one node


def test_a_calibration_says_the_datasheet_link_is_used_and_over_roof_is_explained() -> None:
    fast = _collective("all_reduce", 2**30, 8, 2**30 * 1.75 / 500e9)
    placement = place_collectives(_run((fast,)), lookup("h100-sxm"), "cuda", "H100", calibrated=True)
    assert placement.table["pct_of_link"].iloc[0] == pytest.approx(100 * 500 / 450)
    assert any("measures no link" in n and "datasheet link roof is used" in n for n in placement.notes)
    assert any("1 collective(s) above 100% of the NVLink 4 roof" in n for n in placement.notes)


def test_no_link_entry_cpu_and_several_nodes_are_notes_not_errors() -> None:
    unknown = place_collectives(_run(_ring()), None, "cuda", "Mystery GPU")
    assert math.isnan(unknown.table["pct_of_link"].iloc[0]) and unknown.roof is None
    assert any("no link bandwidth for Mystery GPU" in n for n in unknown.notes)
    cpu = place_collectives(_run(_ring(n=2), device="cpu", nproc=2), lookup("Some CPU", kind="cpu"), "cpu", "Some CPU")
    assert cpu.roof is None and any("shared memory (gloo): no link roof" in n for n in cpu.notes)
    assert list(cpu.table["regime"])[-1] == REGIME_BANDWIDTH
    nodes = place_collectives(_run(_ring(n=16), nproc=8), lookup("h100-sxm"), "cuda", "H100")
    assert any("world size 16 over 8 rank(s) per node" in n for n in nodes.notes)
    nothing = place_collectives(_run(()), lookup("h100-sxm"), "cuda", "H100")
    assert nothing.table.empty and nothing.notes == ()


def test_roofline_command_prints_collectives_vs_link(
    tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _write(tmp_path, _run(_ring()))
    cal = str(save(h100_calibration))
    assert main(["roofline", str(run_dir), "--no-figure", "--calibration", cal]) == 0
    fitted = capsys.readouterr().out  # 80 columns: stdout is not a tty
    assert max(len(line) for line in fitted.splitlines()) <= 80
    assert "busbw" in fitted and sum(ln.endswith(("latency", "bandwidth")) for ln in fitted.splitlines()) == 4
    assert main(["roofline", str(run_dir), "--no-figure", "--calibration", cal, "--wide"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) > 80  # every column, whole keys
    assert "collectives vs link (4; busbw against the per-direction link; datasheet link roof: NVLink 4 450 GB/s" in out
    rows = {ln.split()[0]: ln for ln in out.splitlines()
            if ln.startswith("collectives/") and ln.split()[-1] in ("latency", "bandwidth")}
    assert len(rows) == 4
    assert rows["collectives/nccl/op=all_reduce,dtype=bf16,size_bytes=1073741824"].split()[-2].startswith("88")
    assert "note: the calibration measures no link" in out
    assert main(["roofline", str(run_dir), "--no-figure", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["collectives"]
    assert data["link"]["bytes_per_s"] == pytest.approx(450e9) and data["link"]["direction"].startswith("per direction")
    assert [p["regime"] for p in data["points"]] == ["latency", "latency", "bandwidth", "bandwidth"]
