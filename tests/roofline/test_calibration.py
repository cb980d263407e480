"""Stored calibrations: atomic round trip per fingerprint, lookup, staleness and foreign flags."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.roofline.calibration import (
    Calibration,
    calibration_dir,
    list_calibrations,
    load_file,
    load_for,
    save,
    staleness,
)
from perfkit.roofline.device_info import DeviceInfo

NOW = datetime(2025, 1, 20, tzinfo=timezone.utc)


def test_home_defaults_and_env(perfkit_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert calibration_dir() == perfkit_home / "calibration"
    monkeypatch.delenv("PERFKIT_HOME")
    assert calibration_dir() == Path.home() / ".cache" / "perfkit" / "calibration"


def test_round_trip(perfkit_home: Path, h100_calibration: Calibration, h100_info: DeviceInfo) -> None:
    path = save(h100_calibration)
    assert path.parent == perfkit_home / "calibration"
    assert path.name == f"{h100_info.fingerprint}.json"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind
    loaded = load_for(h100_info, now=NOW)
    assert loaded is not None
    assert loaded.to_dict() == h100_calibration.to_dict()
    assert loaded.path == str(path)
    assert loaded.stale_flags == ()
    assert loaded.peak_flop_per_s == {"bf16": 798e12, "fp32": 51e12}
    assert loaded.bandwidth_bytes_per_s == {"dram": 3.0e12, "l2": 9.0e12}
    assert loaded.ceiling("dram") is not None and loaded.ceiling("dram").sweep[0].n == 50  # type: ignore[union-attr]


def test_recalibration_replaces(perfkit_home: Path, h100_calibration: Calibration, h100_info: DeviceInfo) -> None:
    save(h100_calibration)
    newer = replace(h100_calibration, created="2025-01-19T00:00:00+00:00")
    save(newer)
    assert load_for(h100_info, now=NOW).created == newer.created  # type: ignore[union-attr]
    assert len(list_calibrations()) == 1


def test_other_device_finds_nothing(perfkit_home: Path, h100_calibration: Calibration, h100_info: DeviceInfo) -> None:
    save(h100_calibration)
    h200 = replace(h100_info, name="NVIDIA H200", memory_bytes=150_000_000_000)
    assert load_for(h200) is None


def test_stale_flags(h100_calibration: Calibration, h100_info: DeviceInfo) -> None:
    later = replace(
        h100_info,
        driver="560.28.03",
        clocks_mhz={"sm_max": 1755.0, "mem_max": 2619.0},
        torch="2.6.0",
    )
    flags = staleness(h100_calibration, later, now=datetime(2025, 3, 1, tzinfo=timezone.utc))
    assert any(f.startswith("old: 50 days") for f in flags)
    assert "driver changed: 550.54.15 -> 560.28.03" in flags
    assert "clocks changed: sm_max 1980 -> 1755 MHz" in flags
    assert "torch changed: 2.5.1 -> 2.6.0" in flags
    assert not any(f.startswith("foreign") for f in flags)


def test_foreign_flag(h100_calibration: Calibration, h100_info: DeviceInfo) -> None:
    other = replace(h100_info, name="NVIDIA H100 PCIe", sm_count=114)
    flags = staleness(h100_calibration, other, now=NOW)
    assert flags[0].startswith("foreign: calibrated on NVIDIA H100 80GB HBM3")


def test_cpu_fingerprint_depends_on_threads() -> None:
    one = DeviceInfo(kind="cpu", name="Some CPU", sm_count=2, threads=1, memory_bytes=1)
    two = replace(one, threads=2)
    assert one.fingerprint != two.fingerprint
    assert "-t1-" in one.fingerprint
    assert replace(one, memory_bytes=2).fingerprint == one.fingerprint  # memory is not a CPU key


def test_corrupt_and_foreign_files(perfkit_home: Path, h100_calibration: Calibration) -> None:
    path = save(h100_calibration)
    path.write_text('{"schema_version": 1, "device": ')
    with pytest.raises(StoreError, match=r"\.json:1:\d+: not valid JSON"):
        load_file(path)
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(StoreError, match="not a perfkit calibration"):
        load_file(path)
    data = h100_calibration.to_dict()
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="schema_version 99"):
        load_file(path)
    assert list_calibrations() == []  # unreadable files are skipped in listings
    with pytest.raises(StoreError, match="no such calibration file"):
        load_file(perfkit_home / "missing.json")
