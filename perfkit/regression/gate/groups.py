"""One measurement, one test: group a point's metrics that are the same samples in other units,
and name points briefly.

perfkit derives `flop_per_s` and `bytes_per_s` of a point from its `time_s` samples (cost /
time), so the three say one thing: they are tested once (on the primary, `time_s`), counted once
among the gate's tests, and shown as one row. A metric joins a primary of the same point when
its samples, in both runs, are the primary's times a constant or a constant over them (checked
to 1e-9 on the log scale); with fewer than 3 samples only the derived throughputs join, and a
serving stage's cost joins its rate: USD / 1M output tokens is the price over output tok/s (at SLO:
over goodput tok/s) by definition, so its single values are that rate's measurement too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from perfkit.core.point_spec import PointSpec

DERIVED = ("flop_per_s", "bytes_per_s")
PRIMARY = "time_s"
TOLERANCE = 1e-9
PRICED = {"usd_per_1m_output_tok": "output_tok_per_s", "usd_per_1m_output_tok_at_slo": "goodput_tok_per_s"}


class Sampled(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def point_key(self) -> str | None: ...
    @property
    def samples(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class Group:
    primary: int  # index into the pairs
    members: tuple[tuple[int, float], ...] = ()  # (index, power): member = const * primary ** power


def suffix(name: str, point_key: str | None) -> str:
    """`gemm/mm/m=32:time_s` -> `time_s`; a name without its point key: after the last ':'."""
    if point_key and name.startswith(point_key + ":"):
        return name[len(point_key) + 1 :]
    return name.rsplit(":", 1)[-1] if ":" in name else name


def _power(primary: Sequence[float], other: Sequence[float]) -> float | None:
    """+1 / -1 when log(other) = c + power * log(primary) for every sample, else None."""
    if len(primary) != len(other) or not primary:
        return None
    p, o = np.asarray(primary, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if np.any(p <= 0) or np.any(o <= 0) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(o))):
        return None
    lp, lo = np.log(p), np.log(o)
    for power in (1.0, -1.0):
        r = lo - power * lp
        if float(np.ptp(r)) <= TOLERANCE * max(1.0, float(np.max(np.abs(r)))):
            return power
    return None


def same_measurement(primary: tuple[Sampled, Sampled], other: tuple[Sampled, Sampled]) -> float | None:
    """The power relating `other` to `primary` (both (baseline, candidate)), or None."""
    n = min(len(primary[0].samples), len(primary[1].samples))
    derived = suffix(other[0].name, other[0].point_key) in DERIVED and \
        suffix(primary[0].name, primary[0].point_key) == PRIMARY
    if n < 3 and PRICED.get(suffix(other[0].name, other[0].point_key)) == suffix(primary[0].name, primary[0].point_key):
        return -1.0 if all(v > 0 for side in (*primary, *other) for v in side.samples) else None
    if n < 3 and not derived:
        return None
    powers = {_power(primary[i].samples, other[i].samples) for i in (0, 1)}
    return powers.pop() if len(powers) == 1 and None not in powers else None


def measurement_groups(pairs: Sequence[tuple[Sampled, Sampled]]) -> list[Group]:
    """Groups of (baseline, candidate) metric pairs, in the order of their primaries."""
    by_point: dict[str, list[int]] = {}
    for i, (bm, _) in enumerate(pairs):
        if bm.point_key is not None:
            by_point.setdefault(bm.point_key, []).append(i)
    joined: dict[int, list[tuple[int, float]]] = {}
    member_of: set[int] = set()
    for idx in by_point.values():
        ordered = sorted(idx, key=lambda i: (suffix(pairs[i][0].name, pairs[i][0].point_key) != PRIMARY,
                                             suffix(pairs[i][0].name, pairs[i][0].point_key) in PRICED))
        heads: list[int] = []
        for i in ordered:
            for h in heads:
                power = same_measurement(pairs[h], pairs[i])
                if power is not None:
                    joined.setdefault(h, []).append((i, power))
                    member_of.add(i)
                    break
            else:
                heads.append(i)
    return [Group(i, tuple(joined.get(i, ()))) for i in range(len(pairs)) if i not in member_of]


def point_labels(points: Mapping[str, PointSpec]) -> dict[str, str]:
    """Point key -> `workload p=v ...` naming only the parameters that vary within the workload
    (the workload alone when it has one point); the keys themselves when two labels collide."""
    by_workload: dict[str, list[str]] = {}
    for key, spec in points.items():
        by_workload.setdefault(_workload(key, spec), []).append(key)
    out: dict[str, str] = {}
    for workload, keys in by_workload.items():
        params = {k: dict(points[k].params) for k in keys}
        names = list(dict.fromkeys(n for p in params.values() for n in p))
        varying = [n for n in names if len({repr(p.get(n)) for p in params.values()}) > 1]
        for k in keys:
            shown = " ".join(f"{n}={params[k][n]}" for n in varying if n in params[k])
            out[k] = f"{workload} {shown}".strip()
    if len(set(out.values())) < len(out):
        return {k: k for k in points}
    return out


def _workload(key: str, spec: PointSpec) -> str:
    if spec.workload:
        return spec.workload
    parts = key.split("/")
    return parts[1] if len(parts) >= 3 else parts[0]
