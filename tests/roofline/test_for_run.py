"""`roofline_for_run` decides a run's roof once: `perfkit roofline` and the HTML report (its
roofline view) show the same roofs and the same notes, with and without a calibration and for a
GPU the device table does not know."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.env import DeviceProperties, Env
from perfkit.core.record import load_run
from perfkit.reports.html.data import roofline_view
from perfkit.roofline.calibration import Calibration
from perfkit.roofline.for_run import NO_DEVICE, roofline_for_run
from perfkit.roofline.snapshot import snapshot_of
from tests.roofline.test_commands import H100_ENV, H100_GPU, _point, _write_run

UNKNOWN_ENV = replace(H100_ENV, gpus=(replace(H100_GPU, name="Acme X1"),),
                      device=DeviceProperties(type="cuda", name="Acme X1", sm_count=10))


def _both_views(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], list[str]]:
    """(roof labels, notes) of `perfkit roofline` after checking the HTML view shows the same."""
    assert main(["roofline", str(run_dir), "--format", "json", "--no-figure"]) == 0
    captured = capsys.readouterr()
    cli_roofs = list(json.loads(captured.out)["roofs"])
    cli_notes = [line.removeprefix("note: ") for line in captured.err.splitlines() if line.startswith("note: ")]
    view, why = roofline_view(load_run(run_dir))
    assert view is not None, why
    assert list(view.roofs) == cli_roofs and list(view.notes) == cli_notes
    return cli_roofs, cli_notes


def test_a_run_with_its_calibration(tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    env = replace(H100_ENV, roofline=snapshot_of(h100_calibration.device, h100_calibration))
    run_dir = _write_run(tmp_path, "cuda", env, (_point("gemm/n=8192", "gemm", 8192, "bf16", 1.5e-3),))
    roofs, notes = _both_views(run_dir, capsys)
    assert roofs == ["measured", "datasheet"]
    assert not any("no calibration" in n for n in notes)


def test_a_run_without_a_calibration(tmp_path: Path, perfkit_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _write_run(tmp_path, "cuda", H100_ENV, (_point("gemm/n=8192", "gemm", 8192, "bf16", 1.5e-3),))
    roofs, notes = _both_views(run_dir, capsys)
    assert roofs == ["datasheet"]
    assert notes == ["no calibration for NVIDIA H100 80GB HBM3: run `perfkit calibrate --device cuda` on that "
                     "machine for the measured roof"]


def test_a_run_on_an_unknown_gpu(tmp_path: Path, perfkit_home: Path, h100_calibration: Calibration,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    info = replace(h100_calibration.device, name="Acme X1")
    env = replace(UNKNOWN_ENV, roofline=snapshot_of(info, replace(h100_calibration, device=info)))
    run_dir = _write_run(tmp_path, "cuda", env, (_point("gemm/n=8192", "gemm", 8192, "bf16", 1.5e-3),))
    roofs, notes = _both_views(run_dir, capsys)
    assert roofs == ["measured"] and "'Acme X1' is not in roofline/devices.yaml" in notes[0]


def test_nothing_to_place_against_is_said_the_same_way(tmp_path: Path, perfkit_home: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _write_run(tmp_path, "cuda", Env(), (_point("gemm/n=64", "gemm", 64, "bf16", 1e-5),))
    run = load_run(run_dir)
    assert roofline_for_run(run).missing == NO_DEVICE and roofline_view(run) == (None, NO_DEVICE)
    assert main(["roofline", str(run_dir)]) == 2
    assert NO_DEVICE in capsys.readouterr().err
