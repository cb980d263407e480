"""Decode MBU against the measured read-only roof (calibration's dram_read) beside the copy's."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.roofline.calibrate.detect import detect
from perfkit.roofline.calibration import (
    KIND_MEMORY,
    Calibration,
    MeasuredCeiling,
    save,
    utc_now_iso,
)
from perfkit.roofline.ceilings import read_bandwidth
from perfkit.workloads.decode.metrics import SeveralDevices, decode_metrics
from perfkit.workloads.models.cost import decode_step_cost
from perfkit.workloads.models.presets import PRESETS


def test_mbu_against_the_read_roof_and_the_copy_roof() -> None:
    step = decode_step_cost(PRESETS["llama-3.1-8b"], [4096], b=2)
    tpot = 7.1e-3
    gens = [[0.05 + i * tpot for i in range(129)]]
    copy = SeveralDevices(peak_flop_per_s=706e12, bandwidth_bytes_per_s=4.194e12, source="measured (test)")
    m = decode_metrics(gens, 1, step, (step.flop, step.bytes), 7.0e-3, copy, None, 4.7e12)
    moved = step.weight_bytes + step.kv_bytes
    assert m["mbu"] == pytest.approx(moved / tpot / 4.194e12)
    assert m["mbu_read"] == pytest.approx(moved / tpot / 4.7e12)
    assert m["mbu_read"] < m["mbu"]  # the read roof is higher: the stricter number
    assert m["step_mbu_read"] == pytest.approx(step.bytes / 7.0e-3 / 4.7e12)
    assert m["ceiling"]["read_bandwidth_bytes_per_s"] == 4.7e12
    without = decode_metrics(gens, 1, step, (step.flop, step.bytes), 7.0e-3, copy)
    assert without["mbu_read"] is None and without["step_mbu_read"] is None and without["mbu"] == m["mbu"]


def test_read_bandwidth_comes_from_the_stored_calibration(perfkit_home: Path) -> None:
    value, why = read_bandwidth("cpu")
    assert value is None and "perfkit calibrate" in why
    info = detect("cpu")
    copy = MeasuredCeiling("dram", KIND_MEMORY, 20e9, "test copy", level="dram")
    save(Calibration(device=info, created=utc_now_iso(), ceilings=(copy,)))
    assert read_bandwidth("cpu")[0] is None  # a calibration from before the read roof: none
    read = MeasuredCeiling("dram_read", KIND_MEMORY, 23e9, "test read", level="dram_read")
    save(Calibration(device=info, created=utc_now_iso(), ceilings=(copy, read)))
    value, why = read_bandwidth("cpu")
    assert value == 23e9 and why.startswith("dram_read measured")
