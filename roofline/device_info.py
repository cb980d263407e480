"""`DeviceInfo`: what was detected about a device, and its calibration fingerprint.

The fingerprint names the device a calibration is valid for: a GPU's kind, name, memory size
and SM count; a CPU's model string, logical CPU count and the torch threads the measurement
used (a one-thread calibration is not the roof of a two-thread profile). The driver, clocks and torch
version are NOT in it: when they change, the calibration is flagged stale instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" | "rocm" | "cpu"
    name: str  # torch / NVML device name, or the CPU model string
    index: int = 0
    driver: str | None = None
    runtime: str | None = None  # CUDA / HIP version of torch
    sm_count: int | None = None  # SMs (CUs on AMD); logical CPUs on a CPU
    memory_bytes: int | None = None
    l2_bytes: int | None = None  # last-level cache (L3 on a CPU)
    compute_capability: str | None = None  # "9.0"
    clocks_mhz: Mapping[str, float] = field(default_factory=dict)  # sm_max, mem_max, sm_app, ...
    threads: int | None = None  # CPU: torch intra-op threads of the measurement / profile
    torch: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> str:
        """The torch device string ("cpu", "cuda:0")."""
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"

    @property
    def fingerprint(self) -> str:
        if self.kind == "cpu":
            parts = [self.kind, self.name, str(self.sm_count or ""), f"threads={self.threads or ''}"]
        else:
            parts = [self.kind, self.name, str(self.memory_bytes or ""), str(self.sm_count or "")]
        digest = hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:12]
        slug = re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")[:48] or self.kind
        suffix = f"-t{self.threads}" if self.kind == "cpu" and self.threads else ""
        return f"{slug}{suffix}-{digest}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "index": self.index,
            "driver": self.driver,
            "runtime": self.runtime,
            "sm_count": self.sm_count,
            "memory_bytes": self.memory_bytes,
            "l2_bytes": self.l2_bytes,
            "compute_capability": self.compute_capability,
            "clocks_mhz": dict(self.clocks_mhz),
            "threads": self.threads,
            "torch": self.torch,
            "extra": dict(self.extra),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeviceInfo:
        def opt_int(key: str) -> int | None:
            value = data.get(key)
            return int(value) if value is not None else None

        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            index=int(data.get("index") or 0),
            driver=data.get("driver"),
            runtime=data.get("runtime"),
            sm_count=opt_int("sm_count"),
            memory_bytes=opt_int("memory_bytes"),
            l2_bytes=opt_int("l2_bytes"),
            compute_capability=data.get("compute_capability"),
            clocks_mhz={str(k): float(v) for k, v in (data.get("clocks_mhz") or {}).items()},
            threads=opt_int("threads"),
            torch=data.get("torch"),
            extra=dict(data.get("extra") or {}),
        )
