"""Unit handling: data-file quantities, ncu units and numbers, dtype names, display."""

from __future__ import annotations

import math

import pytest

from perfkit.roofline.units import (
    UnitError,
    format_bytes_per_s,
    format_flop_per_s,
    format_si,
    ncu_unit_scale,
    normalize_dtype,
    parse_ncu_number,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("989.5 TFLOP/s", "flop_per_s", 989.5e12),
        ("67 TFLOPS", "flop_per_s", 67e12),
        ("2.25 PFLOP/s", "flop_per_s", 2.25e15),
        ("3.35 TB/s", "bytes_per_s", 3.35e12),
        ("864 GB/s", "bytes_per_s", 864e9),
        ("50 MiB", "bytes", 50 * 2**20),
        ("50 MB", "bytes", 50e6),
        ("80 GB", "bytes", 80e9),
        ("132", "count", 132.0),
        (132, "count", 132.0),
        ("1e3 GB/s", "bytes_per_s", 1e12),
    ],
)
def test_parse_quantity(text: str, kind: str, expected: float) -> None:
    assert parse_quantity(text, kind) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("3.35 TB/s", "flop_per_s"),  # bandwidth where a peak belongs
        ("989 TFLOP/s", "bytes_per_s"),
        ("50 XB", "bytes"),  # unknown prefix
        ("fast", "bytes"),
        ("3 TB/s", "nonsense-kind"),
    ],
)
def test_parse_quantity_rejects_wrong_units(text: str, kind: str) -> None:
    with pytest.raises(UnitError):
        parse_quantity(text, kind)


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("byte", 1.0, "byte"),
        ("Kbyte", 1e3, "byte"),
        ("Mbyte", 1e6, "byte"),
        ("Gbyte", 1e9, "byte"),
        ("nsecond", 1e-9, "second"),
        ("usecond", 1e-6, "second"),
        ("msecond", 1e-3, "second"),
        ("second", 1.0, "second"),
        ("ns", 1e-9, "second"),
        ("Gbyte/second", 1e9, "byte/second"),
        ("cycle/nsecond", 1e9, "cycle/second"),
        ("Ghz", 1e9, "hz"),
        ("inst", 1.0, "inst"),
        ("%", 1.0, "%"),
        ("", 1.0, ""),
    ],
)
def test_ncu_unit_scale(unit: str, factor: float, base: str) -> None:
    got_factor, got_base = ncu_unit_scale(unit)
    assert got_factor == pytest.approx(factor)
    assert got_base == base


def test_ncu_unit_scale_rejects_unknown_prefix() -> None:
    with pytest.raises(UnitError):
        ncu_unit_scale("Qbyte")


def test_parse_ncu_number() -> None:
    assert parse_ncu_number("10,240,000") == 10_240_000
    assert parse_ncu_number("4.0e-05") == pytest.approx(4e-5)
    assert math.isnan(parse_ncu_number("n/a"))
    assert math.isnan(parse_ncu_number(""))
    with pytest.raises(ValueError):
        parse_ncu_number("(256, 1, 1)")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("torch.bfloat16", "bf16"),
        ("bfloat16", "bf16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("float32", "fp32"),
        ("TF32", "tf32"),
        ("float8_e4m3fn", "fp8"),
        ("e5m2", "fp8"),
        ("float64", "fp64"),
    ],
)
def test_normalize_dtype(name: str, canonical: str) -> None:
    assert normalize_dtype(name) == canonical


def test_normalize_dtype_unknown() -> None:
    with pytest.raises(UnitError, match="unknown dtype"):
        normalize_dtype("int3")


def test_format_si() -> None:
    assert format_flop_per_s(4.12e14) == "412 TFLOP/s"
    assert format_bytes_per_s(3.0e12) == "3 TB/s"
    assert format_si(0.00123, "s") == "0.00123 s"
    assert format_si(float("nan"), "s") == "-"
    assert format_si(None, "s") == "-"
