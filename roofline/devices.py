"""The datasheet device table (`devices.yaml`, one source per number) and name lookup.

`lookup("NVIDIA H100 80GB HBM3")` -> the H100 SXM entry; `lookup(cpu_model, kind="cpu")` -> the
generic CPU entry under that model string (no datasheet peaks: measured ceilings are the roof
there). Unknown devices give None; callers then use measured ceilings alone and warn.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

import yaml

from perfkit.core.errors import DeviceError
from perfkit.roofline.units import UnitError, normalize_dtype, parse_quantity

DEVICES_FILE = "devices.yaml"
CPU_KEY = "cpu"


@dataclass(frozen=True)
class DeviceSpec:
    """Datasheet ceilings of one device. Peaks are dense flop/s per canonical dtype."""

    key: str
    name: str
    kind: str  # cuda | rocm | cpu
    peak_flop_per_s: Mapping[str, float] = field(default_factory=dict)
    bandwidth_bytes_per_s: float | None = None
    l2_bytes: float | None = None
    sms: int | None = None
    memory_bytes: float | None = None
    link_bytes_per_s: float | None = None  # inter-GPU link, per direction (see devices.yaml)
    link_fabric: str = ""  # "NVLink 4", "PCIe Gen5 x16", ...
    sources: Mapping[str, str] = field(default_factory=dict)  # "peak.bf16", "bandwidth", ...
    match: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        return any(re.search(p, name, flags=re.IGNORECASE) for p in self.match)

    def source(self, what: str) -> str:
        return self.sources.get(what, "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "kind": self.kind,
            "peak_flop_per_s": dict(self.peak_flop_per_s),
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "l2_bytes": self.l2_bytes,
            "sms": self.sms,
            "memory_bytes": self.memory_bytes,
            "link_bytes_per_s": self.link_bytes_per_s,
            "link_fabric": self.link_fabric,
            "sources": dict(self.sources),
        }


def parse_table(data: Any, origin: str = DEVICES_FILE) -> dict[str, DeviceSpec]:
    """Validate the YAML document of the device table; every number needs a source."""
    if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
        raise DeviceError(f"{origin}: no 'devices' mapping at the top level; see roofline/devices.yaml")
    table: dict[str, DeviceSpec] = {}
    for key, entry in data["devices"].items():
        table[str(key)] = _parse_entry(str(key), entry, origin)
    return table


def _parse_entry(key: str, entry: Any, origin: str) -> DeviceSpec:
    where = f"{origin}: devices.{key}"
    if not isinstance(entry, dict):
        raise DeviceError(f"{where}: expected a mapping; see the header of roofline/devices.yaml")
    sources: dict[str, str] = {}

    def sourced(item: Any, what: str, kind: str) -> float | None:
        if item is None:
            return None
        if not isinstance(item, dict) or "value" not in item:
            raise DeviceError(f"{where}.{what}: expected {{value: ..., source: ...}}")
        source = str(item.get("source") or "").strip()
        if not source:
            raise DeviceError(f"{where}.{what}: a number without a source; add `source:`")
        sources[what] = source
        if item["value"] is None:
            return None
        try:
            return parse_quantity(item["value"], kind)
        except UnitError as exc:
            raise DeviceError(f"{where}.{what}: {exc}") from exc

    peaks: dict[str, float] = {}
    for dtype, item in (entry.get("peaks") or {}).items():
        try:
            canonical = normalize_dtype(str(dtype))
        except UnitError as exc:
            raise DeviceError(f"{where}.peaks: {exc}") from exc
        value = sourced(item, f"peak.{canonical}", "flop_per_s")
        if value is not None:
            peaks[canonical] = value
    kind = str(entry.get("kind", "cuda"))
    if kind not in ("cuda", "rocm", "cpu"):
        raise DeviceError(f"{where}.kind: {kind!r} is not one of cuda, rocm, cpu")
    sms = sourced(entry.get("sms"), "sms", "count")
    match = entry.get("match") or []
    if not isinstance(match, list):
        raise DeviceError(f"{where}.match: expected a list of regular expressions")
    for pattern in match:
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise DeviceError(f"{where}.match: bad regular expression {pattern!r} ({exc})") from exc
    link = entry.get("link")
    return DeviceSpec(
        key=key,
        name=str(entry.get("name", key)),
        kind=kind,
        peak_flop_per_s=peaks,
        bandwidth_bytes_per_s=sourced(entry.get("bandwidth"), "bandwidth", "bytes_per_s"),
        l2_bytes=sourced(entry.get("l2"), "l2", "bytes"),
        sms=int(sms) if sms is not None else None,
        memory_bytes=sourced(entry.get("memory"), "memory", "bytes"),
        link_bytes_per_s=sourced(link, "link", "bytes_per_s"),
        link_fabric=str(link.get("fabric") or "") if isinstance(link, dict) else "",
        sources=sources,
        match=tuple(str(p) for p in match),
    )


@functools.lru_cache(maxsize=1)
def device_table() -> dict[str, DeviceSpec]:
    """The shipped table (package data), parsed once."""
    text = resources.files("perfkit.roofline").joinpath(DEVICES_FILE).read_text(encoding="utf-8")
    return parse_table(yaml.safe_load(text))


def lookup(name: str, kind: str | None = None) -> DeviceSpec | None:
    """The datasheet entry for a device name (runtime name, display name or table key).

    A CPU (kind="cpu", or name "cpu") gets the generic CPU entry named after its model string.
    None for a device the table does not know.
    """
    table = device_table()
    wanted = name.strip()
    lowered = wanted.lower()
    for spec in table.values():
        if spec.kind == "cpu":
            continue
        if lowered in (spec.key.lower(), spec.name.lower()) or spec.matches(wanted):
            return spec
    if kind == "cpu" or lowered == CPU_KEY:
        generic = table[CPU_KEY]
        return replace(generic, name=wanted if lowered != CPU_KEY else generic.name)
    return None


def current_device_name(device: str) -> str:
    """Runtime name of `device` ("cpu", "cuda", "cuda:1"): GPU name or the CPU model string."""
    from perfkit.roofline.calibrate.detect import detect

    return detect(device).name
