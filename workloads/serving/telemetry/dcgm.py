"""A remote server's GPU energy over a stage from a DCGM exporter's Prometheus text (pure).

NVIDIA's dcgm-exporter serves, per GPU (labels `gpu`, `UUID`, `Hostname`, `modelName`, ...),
`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (a counter, mJ since boot) and `DCGM_FI_DEV_POWER_USAGE`
(a gauge, W) in its shipped default counters (etc/default-counters.csv; docs/serving.md cites them).

- `dcgm-counter`: energy = sum over the chosen GPUs of the counter's increase, mJ -> J.
- `dcgm-power`: without the counter, the power gauge sampled during the stage, integrated by the
  trapezoid rule over the samples' times, summed over GPUs.

Every refusal leaves energy None with the reason (never 0): a counter that went back (a GPU
reset), that did not move (the exporter's collect interval longer than the stage), a value that
is not finite or negative, a mean power above MAX_W_PER_GPU for a GPU, a GPU missing from a scrape,
no GPU matching the filter, a GPU served twice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfkit.workloads.serving.telemetry.prometheus import parse

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # counter, mJ
POWER = "DCGM_FI_DEV_POWER_USAGE"  # gauge, W
MAX_W_PER_GPU = 2000.0  # a mean above this over a stage is not believed (no GPU draws 2 kW)
COUNTER, POWER_SOURCE = "dcgm-counter", "dcgm-power"

Readings = dict[str, float]  # GPU key (UUID, else Hostname/gpu) -> value


@dataclass(frozen=True)
class StageEnergy:
    """Energy of the server's GPUs over a stage: joules, or None with the reason (never 0)."""

    energy_j: float | None
    source: str  # nvml | dcgm-counter | dcgm-power
    reason: str = ""  # why energy_j is None
    gpus: int = 0  # GPUs summed
    window_s: float | None = None  # the span the energy covers (scrape to scrape)


def readings(text: str, name: str, gpus: Sequence[str] = ()) -> Readings | str:
    """Each chosen GPU's `name` sample (only the lines of `name` are parsed), or why not."""
    lines = [ln for ln in text.split("\n") if ln.startswith(name) and ln[len(name):len(name) + 1] in ("{", " ")]
    out: Readings = {}
    for (metric, labels), value in parse("\n".join(lines)).values.items():
        if metric != name:
            continue
        lab = dict(labels)
        if gpus and lab.get("gpu") not in gpus and lab.get("UUID") not in gpus:
            continue
        key = lab.get("UUID") or f"{lab.get('Hostname', '')}/{lab.get('gpu', '')}"
        if "GPU_I_ID" in lab:
            key += f"/mig{lab['GPU_I_ID']}"
        if key in out:
            return f"GPU {key} is served twice by {name}; choose GPUs with --gpu-metrics-gpus"
        out[key] = value
    if not out:
        return f"no {name} for GPUs {','.join(gpus)}" if gpus else f"no {name}"
    return out


def _bad(values: Mapping[str, float], what: str) -> str:
    for key, v in values.items():
        if not math.isfinite(v) or v < 0:
            return f"{what} of GPU {key} is {v} (not a finite number >= 0)"
    return ""


def counter_energy(before: Readings, after: Readings, window_s: float) -> StageEnergy:
    """The counters' increase (mJ -> J) summed over GPUs, or None with the reason."""
    def no(reason: str) -> StageEnergy:
        return StageEnergy(None, COUNTER, reason, len(before), window_s)

    bad = _bad(before, "energy counter") or _bad(after, "energy counter")
    if bad:
        return no(bad)
    if set(before) != set(after):
        return no(f"GPUs changed between scrapes ({len(before)} before, {len(after)} after)")
    deltas = {k: after[k] - before[k] for k in before}
    back = [k for k, d in deltas.items() if d < 0]
    if back:
        return no(f"energy counter of GPU {back[0]} went back (a GPU reset?)")
    total_j = sum(deltas.values()) / 1000.0
    if total_j == 0:
        return no("energy counter did not advance (the exporter's collect interval longer than the stage?)")
    return _plausible(StageEnergy(total_j, COUNTER, "", len(before), window_s))


def power_energy(samples: Sequence[tuple[float, Readings]]) -> StageEnergy:
    """The power gauge (W) integrated over (t_s, readings) samples by the trapezoid rule, summed
    over GPUs, or None with the reason."""
    def no(reason: str) -> StageEnergy:
        return StageEnergy(None, POWER_SOURCE, reason, len(samples[0][1]) if samples else 0)

    if len(samples) < 2:
        return no(f"{len(samples)} power sample(s); two are needed")
    gpus = set(samples[0][1])
    total_j = 0.0
    for (t0, a), (t1, b) in itertools.pairwise(samples):
        if set(b) != gpus:
            return no(f"GPUs changed between power samples ({len(gpus)} then {len(b)})")
        bad = _bad(b, "power") or _bad(a, "power")
        if bad:
            return no(bad)
        if not t1 >= t0:
            return no("power samples out of time order")
        total_j += (t1 - t0) * sum(a[k] + b[k] for k in gpus) / 2.0
    window_s = samples[-1][0] - samples[0][0]
    if not window_s > 0:
        return no("power samples span no time")
    return _plausible(StageEnergy(total_j, POWER_SOURCE, "", len(gpus), window_s))


def _plausible(e: StageEnergy) -> StageEnergy:
    if e.energy_j is None or e.window_s is None or not e.window_s > 0 or not e.gpus:
        return e
    mean_w = e.energy_j / e.window_s / e.gpus
    if not (math.isfinite(mean_w) and mean_w <= MAX_W_PER_GPU):
        return StageEnergy(None, e.source, f"mean power {mean_w:.4g} W per GPU over {e.window_s:.3g} s is above "
                           f"{MAX_W_PER_GPU:.0f} W: not believed", e.gpus, e.window_s)
    return e
