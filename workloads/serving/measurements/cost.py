"""What serving a million tokens costs, from a GPU-hour price and a measured token rate.

Definition (REFERENCE.md "Serving metrics"):

    USD per 1M tokens = (usd_per_gpu_hour x gpus / 3600) / (tokens per second) x 1e6

for output, input or total tokens by the rate given; "at SLO" uses goodput's output token rate.
A rate that is missing, zero, negative or not finite gives None (never a division by zero).

A prices file (YAML or JSON) names GPU-hour prices with where each came from:

    prices:
      - {name: h100-ondemand, usd_per_gpu_hour: 2.99, source: "https://..."}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from perfkit.core.errors import SpecError
from perfkit.core.finite import finite_float, shown
from perfkit.core.json_file import load_json
from perfkit.core.yaml_source import YamlDoc, load_yaml

MAX_PRICES_BYTES = 1 << 20  # a prices file larger than this is refused
MAX_USD_PER_GPU_HOUR = 1_000_000  # as `--price-per-gpu-hour` (ServingSpec)
MAX_GPUS = 1_000_000  # as `--gpus`


@dataclass(frozen=True)
class Price:
    """usd_per_gpu_hour for each of `gpus` GPUs, and where the price came from (a URL, a quote).
    Invalid values raise ValueError."""

    usd_per_gpu_hour: float
    gpus: int
    source: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.usd_per_gpu_hour) and self.usd_per_gpu_hour >= 0):
            raise ValueError(f"usd_per_gpu_hour must be a number >= 0, not {self.usd_per_gpu_hour}")
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            raise ValueError(f"gpus must be a whole number >= 1, not {self.gpus!r}")

    @property
    def usd_per_s(self) -> float:
        """What all the GPUs cost per second."""
        return self.usd_per_gpu_hour * self.gpus / 3600.0


def usd_per_1m_tokens(price: Price, tok_per_s: float | None) -> float | None:
    """USD per million tokens at `tok_per_s`; None when the rate is missing, <= 0 or not finite."""
    if tok_per_s is None or not math.isfinite(tok_per_s) or tok_per_s <= 0:
        return None
    return price.usd_per_s / tok_per_s * 1e6


def load_prices(path: str | Path) -> dict[str, Price]:
    """The prices of a YAML or JSON prices file by name, each for one GPU (`gpus` may be given
    per entry; use dataclasses.replace for a run's count). Bad input raises one located SpecError
    naming the file, the entry and the fix."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise SpecError(f"{p}: prices file not found; check the path") from None
    if size > MAX_PRICES_BYTES:
        raise SpecError(f"{p}: prices file is {size} bytes (more than {MAX_PRICES_BYTES}); "
                        "pass a prices file, not a data dump")
    if p.suffix.lower() == ".json":
        return _prices(p, _json(p), None)
    doc = load_yaml(p)
    return _prices(p, doc.data, doc)


def _json(p: Path) -> Any:
    """The parsed file through the one bounded JSON reader (nesting, integer digits, UTF-8)."""
    try:
        return load_json(p, "pass a prices file: {prices: [{name, usd_per_gpu_hour, source}]}", SpecError)
    except OSError as exc:
        raise SpecError(f"{p}: cannot read ({exc.__class__.__name__}); pass a readable "
                        "JSON file") from None


class _Fail(Protocol):
    def __call__(self, loc: list[str | int], message: str, key: bool = False) -> SpecError: ...


def _prices(p: Path, data: Any, doc: YamlDoc | None) -> dict[str, Price]:
    def fail(loc: list[str | int], message: str, key: bool = False) -> SpecError:
        if doc is not None:
            return doc.error(loc, message, key=key)  # FILE:LINE:COL: ...
        return SpecError(f"{p}: {message}")

    entries = data.get("prices") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise fail([], "expected `prices:` with a list of {name, usd_per_gpu_hour, source}; "
                       "add it")
    out: dict[str, Price] = {}
    for i, entry in enumerate(entries):
        out_name, price = _entry(i, entry, fail)
        if out_name in out:
            raise fail(["prices", i, "name"], f"prices[{i}]: name '{out_name}' is given twice; "
                                              "keep one")
        out[out_name] = price
    return out


def _entry(i: int, entry: Any, fail: _Fail) -> tuple[str, Price]:
    loc: list[str | int] = ["prices", i]
    if not isinstance(entry, dict):
        raise fail(loc, f"prices[{i}] must be a mapping with name, usd_per_gpu_hour, source; fix it")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise fail(loc, f"prices[{i}]: `name` is missing or not text; give it a name")
    what = f"prices[{i}] ({name})"
    unknown = sorted(str(k) for k in entry if k not in ("name", "usd_per_gpu_hour", "source", "gpus"))
    if unknown:
        raise fail([*loc, unknown[0]], f"{what}: unknown key '{unknown[0]}'; use name, "
                                       "usd_per_gpu_hour, source (and gpus)", True)
    usd = finite_float(entry.get("usd_per_gpu_hour"))
    if usd is None or not 0 <= usd <= MAX_USD_PER_GPU_HOUR:
        raise fail([*loc, "usd_per_gpu_hour"], f"{what}: usd_per_gpu_hour must be a number >= 0 and at "
                                               f"most {MAX_USD_PER_GPU_HOUR:,}, not {shown(entry.get('usd_per_gpu_hour'))}; fix it")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise fail([*loc, "source"], f"{what}: `source` is missing; say where the price comes "
                                     "from (a URL or a quote)")
    gpus = entry.get("gpus", 1)
    if type(gpus) is not int or not 1 <= gpus <= MAX_GPUS:
        raise fail([*loc, "gpus"], f"{what}: gpus must be a whole number 1 to {MAX_GPUS:,}, not {shown(gpus)}; fix it")
    return name, Price(usd, gpus, source)


J_PER_KWH = 3.6e6


def usd_energy_per_1m_tokens(energy_j: float | None, tokens: float, usd_per_kwh: float) -> float | None:
    """What the GPUs' energy costs per million tokens: energy_j / tokens x 1e6 / 3.6e6 x USD/kWh;
    None (not measured, never 0) without energy or tokens."""
    if energy_j is None or not (math.isfinite(energy_j) and energy_j > 0) or not (math.isfinite(tokens) and tokens > 0):
        return None
    return energy_j / tokens * 1e6 / J_PER_KWH * usd_per_kwh
