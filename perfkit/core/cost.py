"""Analytic cost of a workload point: floating-point operations and minimal bytes moved."""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.core.bounded import NonNegative


@dataclass(frozen=True)
class Cost:
    """flop counts 2 per multiply-add; bytes = every input read once + every output written once."""

    flop: NonNegative
    bytes: NonNegative

    def __post_init__(self) -> None:  # counts computed as ints are written as floats
        object.__setattr__(self, "flop", float(self.flop))
        object.__setattr__(self, "bytes", float(self.bytes))

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flop / self.bytes if self.bytes > 0 else float("inf")

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flop + other.flop, self.bytes + other.bytes)
