"""Units: parse quantities written with units ("989 TFLOP/s", "3.35 TB/s", "50 MiB", ncu's
"Mbyte" / "usecond"), normalize dtype names, and format SI values for display.

Inside perfkit every value is SI and carries its unit in its name (`flop_per_s`,
`bytes_per_s`, `bytes`, `time_s`); the strings here exist only at the data-file and display
boundaries. Decimal prefixes are powers of 1000 and binary prefixes (Ki, Mi, Gi) powers of 1024.
"""

from __future__ import annotations

import math
import re

from perfkit.core.units import fmt_rate

DECIMAL_PREFIX: dict[str, float] = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
SUBUNIT_PREFIX: dict[str, float] = {"m": 1e-3, "u": 1e-6, "µ": 1e-6, "n": 1e-9, "p": 1e-12}
BINARY_PREFIX: dict[str, float] = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

# Unit kinds a data-file quantity may have, with the base-unit spellings each accepts.
QUANTITY_UNITS: dict[str, tuple[str, ...]] = {
    "flop_per_s": ("FLOP/s", "FLOPS", "flop/s", "OP/s", "OPS"),
    "bytes_per_s": ("B/s", "byte/s", "bytes/s"),
    "bytes": ("B", "byte", "bytes"),
    "hz": ("Hz", "hz"),
    "count": ("",),
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")


class UnitError(ValueError):
    """A quantity or unit string that cannot be understood."""


def parse_quantity(text: str | float | int, kind: str) -> float:
    """Parse "989.4 TFLOP/s" (kind flop_per_s), "3.35 TB/s" (bytes_per_s), "50 MiB" (bytes).

    A bare number is taken as already in the base unit. Raises UnitError on a unit that does
    not belong to `kind`.
    """
    if isinstance(text, bool):
        raise UnitError(f"{text!r} is not a quantity")
    if isinstance(text, (int, float)):
        return float(text)
    if kind not in QUANTITY_UNITS:
        raise UnitError(f"unknown quantity kind {kind!r}; one of {sorted(QUANTITY_UNITS)}")
    m = _QUANTITY.match(str(text))
    if not m:
        raise UnitError(f"{text!r} is not '<number> <unit>'")
    number, unit = float(m.group(1)), m.group(2)
    if unit == "":
        return number
    for base in QUANTITY_UNITS[kind]:
        if base and unit.endswith(base):
            prefix = unit[: -len(base)]
            scale = _prefix_scale(prefix)
            if scale is not None:
                return number * scale
    raise UnitError(f"{text!r}: unit {unit!r} is not a {kind} unit ({', '.join(QUANTITY_UNITS[kind])})")


def _prefix_scale(prefix: str) -> float | None:
    if prefix in BINARY_PREFIX:
        return BINARY_PREFIX[prefix]
    if prefix in DECIMAL_PREFIX:
        return DECIMAL_PREFIX[prefix]
    return None


# --- Nsight Compute units ---------------------------------------------------------------------
# ncu prints units such as "byte", "Kbyte", "Mbyte", "Gbyte", "nsecond", "usecond", "msecond",
# "second", "byte/second", "Gbyte/second", "cycle/nsecond", "inst", "cycle", "%", "hz", "Ghz".
# With --print-units base every unit is already base; the default (auto) scales them.
NCU_BASE_UNITS: tuple[str, ...] = (
    "byte",
    "second",
    "hz",
    "cycle",
    "inst",
    "warp",
    "thread",
    "sector",
    "request",
    "block",
    "register",
    "flop",
    "op",
)
_NCU_TIME_SHORT = {"ns": ("n", "second"), "us": ("u", "second"), "ms": ("m", "second"), "s": ("", "second")}


def ncu_unit_scale(unit: str) -> tuple[float, str]:
    """(factor, base unit) so that value_in_base = value * factor. "Mbyte" -> (1e6, "byte").

    Compound units scale each part: "Gbyte/second" -> (1e9, "byte/second"),
    "cycle/usecond" -> (1e6, "cycle/second"). Dimensionless units ("%", "", "inst/cycle") have
    factor 1. Raises UnitError on a prefix it does not know.
    """
    unit = unit.strip()
    if "/" in unit:
        num, _, den = unit.partition("/")
        f_num, b_num = ncu_unit_scale(num)
        f_den, b_den = ncu_unit_scale(den)
        return f_num / f_den, f"{b_num}/{b_den}"
    if unit in ("", "%") or unit.startswith("("):
        return 1.0, unit
    if unit in _NCU_TIME_SHORT:
        prefix, base = _NCU_TIME_SHORT[unit]
        return _any_prefix(prefix, unit), base
    lowered = unit.lower()
    for base in NCU_BASE_UNITS:
        stem = base + "s" if lowered.endswith(base + "s") else base
        if lowered.endswith(stem):
            prefix = unit[: len(unit) - len(stem)]
            return _any_prefix(prefix, unit), base
    return 1.0, unit  # an unprefixed unit this table does not know (e.g. "pJ"): kept as is


def _any_prefix(prefix: str, unit: str) -> float:
    if prefix in SUBUNIT_PREFIX:
        return SUBUNIT_PREFIX[prefix]
    scale = _prefix_scale(prefix)
    if scale is None:
        raise UnitError(f"ncu unit {unit!r}: unknown prefix {prefix!r}")
    return scale


def parse_ncu_number(text: str) -> float:
    """ncu prints "10,240,000", "4.0e-05", "n/a" or ""; thousands separators are dropped."""
    cleaned = text.strip().replace(",", "")
    if cleaned in ("", "n/a", "N/A", "-"):
        return math.nan
    return float(cleaned)


# --- dtypes -----------------------------------------------------------------------------------
DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
_DTYPE_ALIASES: dict[str, str] = {
    "float64": "fp64",
    "double": "fp64",
    "fp64": "fp64",
    "f64": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "fp32": "fp32",
    "f32": "fp32",
    "tf32": "tf32",
    "tensorfloat32": "tf32",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "f16": "fp16",
    "fp8": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2": "fp8",
    "float8_e5m2fnuz": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
}


def normalize_dtype(name: str) -> str:
    """"torch.bfloat16" / "bfloat16" / "bf16" -> "bf16". Raises UnitError on an unknown name."""
    key = str(name).strip().lower().removeprefix("torch.")
    if key in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[key]
    raise UnitError(f"unknown dtype {name!r}; one of {', '.join(DTYPES)} (or a torch dtype name)")


# --- display ----------------------------------------------------------------------------------
_DISPLAY_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def format_si(value: float | None, unit: str) -> str:
    """format_si(4.12e14, "FLOP/s") -> "412 TFLOP/s" (perfkit.core.units, 3 digits); None / NaN -> "-"."""
    if value is not None and isinstance(value, float) and math.isinf(value):
        return f"inf {unit}"
    return fmt_rate(value, unit)


def format_flop_per_s(value: float | None) -> str:
    return format_si(value, "FLOP/s")


def format_bytes_per_s(value: float | None) -> str:
    return format_si(value, "B/s")
