"""The datasheet table: every number sourced, dense peaks, runtime-name matching, bad tables."""

from __future__ import annotations

import pytest
import yaml

from perfkit.core.errors import DeviceError
from perfkit.roofline.devices import device_table, lookup, parse_table


def test_every_number_has_a_source() -> None:
    table = device_table()
    assert {"h100-sxm", "h100-pcie", "h200-sxm", "a100-sxm-80gb", "l40s", "l4", "b200", "mi300x", "cpu"} <= set(table)
    for spec in table.values():
        for dtype in spec.peak_flop_per_s:
            assert spec.source(f"peak.{dtype}"), (spec.key, dtype)
        for field in ("bandwidth", "l2", "sms", "memory"):
            assert spec.source(field), (spec.key, field)


@pytest.mark.parametrize(
    ("runtime_name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA B200", "b200"),
        ("AMD Instinct MI300X", "mi300x"),
        ("h100-sxm", "h100-sxm"),  # the table key itself
    ],
)
def test_lookup_by_runtime_name(runtime_name: str, key: str) -> None:
    spec = lookup(runtime_name)
    assert spec is not None
    assert spec.key == key


@pytest.mark.parametrize("runtime_name", ["NVIDIA H100 NVL", "NVIDIA A100-SXM4-40GB", "NVIDIA L40", "Tesla T4"])
def test_lookup_does_not_guess_other_parts(runtime_name: str) -> None:
    assert lookup(runtime_name) is None


def test_peaks_are_dense_not_sparse() -> None:
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert h100.peak_flop_per_s["bf16"] == pytest.approx(989.5e12)  # 1,979 is the 2:4-sparse figure
    assert h100.peak_flop_per_s["fp8"] == pytest.approx(1979e12)
    assert h100.peak_flop_per_s["fp32"] == pytest.approx(67e12)
    assert h100.bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert h100.sms == 132
    assert h100.l2_bytes == 50 * 2**20
    assert "halved" in h100.source("peak.bf16")


def test_l4_bandwidth_is_300_gb_per_s() -> None:
    l4 = lookup("NVIDIA L4")
    assert l4 is not None
    assert l4.bandwidth_bytes_per_s == pytest.approx(300e9)  # PyTorch's table says 3350
    assert l4.l2_bytes is None  # read at run time


def test_h200_differs_from_h100_in_bandwidth_only() -> None:
    h100, h200 = lookup("h100-sxm"), lookup("h200-sxm")
    assert h100 is not None and h200 is not None
    assert h200.peak_flop_per_s == h100.peak_flop_per_s
    assert h200.bandwidth_bytes_per_s == pytest.approx(4.8e12)


def test_cpu_entry_is_keyed_by_model_and_has_no_datasheet_numbers() -> None:
    spec = lookup("Intel(R) Xeon(R) Processor @ 2.80GHz", kind="cpu")
    assert spec is not None
    assert spec.kind == "cpu"
    assert spec.name == "Intel(R) Xeon(R) Processor @ 2.80GHz"
    assert spec.peak_flop_per_s == {}
    assert spec.bandwidth_bytes_per_s is None
    assert lookup("Intel(R) Xeon(R) Processor @ 2.80GHz") is None  # without kind: unknown


def _table(entry: dict[str, object]) -> dict[str, object]:
    return {"devices": {"x": {"name": "X", "kind": "cuda", "match": ["X"], **entry}}}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"bandwidth": {"value": "1 TB/s"}}, "without a source"),
        ({"bandwidth": {"value": "1 TFLOP/s", "source": "s"}}, "not a bytes_per_s unit"),
        ({"peaks": {"int3": {"value": "1 TFLOP/s", "source": "s"}}}, "unknown dtype"),
        ({"peaks": {"bf16": "1 TFLOP/s"}}, "expected {value"),
        ({"match": ["("]}, "bad regular expression"),
        ({"kind": "tpu"}, "not one of"),
    ],
)
def test_bad_tables_are_refused_with_the_place(entry: dict[str, object], message: str) -> None:
    with pytest.raises(DeviceError, match=message) as info:
        parse_table(_table(entry), origin="my.yaml")
    assert "my.yaml: devices.x" in str(info.value)


def test_table_without_devices_mapping() -> None:
    with pytest.raises(DeviceError, match="no 'devices' mapping"):
        parse_table(yaml.safe_load("schema_version: 1\n"))
