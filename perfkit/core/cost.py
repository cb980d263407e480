"""Analytic cost of a workload point: floating-point operations and minimal bytes moved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cost:
    """flop counts 2 per multiply-add; bytes = every input read once + every output written once."""

    flop: float
    bytes: float

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flop / self.bytes if self.bytes > 0 else float("inf")

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flop + other.flop, self.bytes + other.bytes)

    def to_dict(self) -> dict[str, float]:
        return {"flop": float(self.flop), "bytes": float(self.bytes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cost:
        return cls(flop=float(data["flop"]), bytes=float(data["bytes"]))
