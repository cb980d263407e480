"""The one number formatter (perfkit/core/units.py): 3 significant digits, on known values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfkit.core.units import (
    fmt_change,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_percent,
    fmt_rate,
    fmt_time,
    fmt_value,
    sig,
)


@pytest.mark.parametrize(("x", "text"), [
    (0.0, "0"), (1.0, "1"), (1.2345, "1.23"), (-1.2355, "-1.24"), (0.012345, "0.0123"), (123.45, "123"),
    (999.6, "1000"), (12345.0, "12300"), (1.2e-7, "1.2e-07"), (9.9996e-5, "0.0001"), (2e15, "2e+15"),
    (math.inf, "inf"), (-math.inf, "-inf"),
])
def test_sig(x: float, text: str) -> None:
    assert sig(x) == text


@pytest.mark.parametrize(("seconds", "text"), [
    (1.234e-5, "12.3 us"), (0.0045678, "4.57 ms"), (1.2, "1.2 s"), (9.996e-4, "1 ms"), (2.5e-10, "0.25 ns"),
    (0.0, "0 ns"), (4321.0, "4320 s"), (None, "-"), (math.nan, "-"), (np.float64(3e-6), "3 us"),
])
def test_fmt_time(seconds: float | None, text: str) -> None:
    assert fmt_time(seconds) == text


def test_rates_and_values_by_unit() -> None:
    assert fmt_rate(1.2345e12, "flop/s") == "1.23 Tflop/s"
    assert fmt_rate(999.7, "B/s") == "1 kB/s"  # the prefix is chosen after rounding
    assert fmt_rate(12.0, "B/s") == "12 B/s"
    assert fmt_rate(math.inf, "B/s") == fmt_rate(None, "B/s") == "-"
    assert fmt_value(2.5e-3, "s") == fmt_value(2.5e-3, "time_s") == "2.5 ms"
    assert fmt_value(12.345, "ms") == "12.3 ms" and fmt_value(1500.0, "us") == "1.5 ms"
    assert fmt_value(45.678, "%") == "45.7%"
    assert fmt_value(0.82345, "") == "0.823"
    assert fmt_value(1.5e9, "tok/s") == "1.5 Gtok/s" and fmt_value(2048, "B") == "2.05 kB"
    assert fmt_value(math.nan, "s") == fmt_value("x", "s") == "-"


def test_percentages_changes_and_p() -> None:
    assert fmt_percent(0.82345) == "82.3%" and fmt_percent(None) == "-"
    assert fmt_pct(0.00534) == "±0.534%" and fmt_pct(0.12) == "±12%" and fmt_pct(math.inf) == "-"
    assert fmt_change(1.05214) == "+5.21%" and fmt_change(0.5) == "-50%" and fmt_change(21.0) == "+2000%"
    assert fmt_change(1.0) == "+0%" and fmt_change(math.nan) == fmt_change("n/a") == "-"
    assert fmt_interval(0.9512, 1.023) == "[-4.88%, +2.3%]"
    assert fmt_interval(1.0, math.nan) == "-"
    assert fmt_p(0.012345) == "0.0123" and fmt_p(0.5) == "0.5" and fmt_p(3e-7) == "<1e-4" and fmt_p(None) == "-"


def test_fmt_num_keeps_text_and_marks_missing() -> None:
    assert fmt_num(1.23456e-7) == "1.23e-07"
    assert fmt_num(2) == "2" and fmt_num(1.23456, 5) == "1.2346"
    assert fmt_num(None) == fmt_num(math.nan) == fmt_num(np.float64("nan")) == "-"
    assert fmt_num("n/a") == "n/a"
