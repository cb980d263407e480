"""When each request of an open-loop stage arrives: Poisson or gamma gaps, or a replay file.

Gaps between arrivals are gamma-distributed with shape = burstiness and mean 1 / rate (shape 1:
exponential gaps, a Poisson process; below 1: burstier; above 1: more regular), as vLLM's
`--burstiness`. The first request arrives at 0. A replay file gives the arrival times itself:
one number per line (seconds), or JSON lines with `timestamp` (seconds) or `timestamp_ms`
(Mooncake traces) and optionally `input_length` / `input_tokens`, `output_length` /
`output_tokens`; times are shifted so the first is 0.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfkit.core.errors import SpecError

MAX_REPLAY_BYTES = 256 * 1024 * 1024


def gamma_arrivals(rate_per_s: float, n: int, burstiness: float, seed: int) -> list[float]:
    """`n` arrival times (s) at `rate_per_s` (inf: all at once)."""
    if n <= 0:
        return []
    if math.isinf(rate_per_s):
        return [0.0] * n
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate_per_s * burstiness), size=n - 1)
    return [0.0, *np.cumsum(gaps).tolist()]


@dataclass(frozen=True)
class Arrival:
    time_s: float
    input_tokens: int | None = None
    output_tokens: int | None = None


def _int_field(obj: dict[str, object], keys: tuple[str, ...], where: str) -> int | None:
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10_000_000:
                raise SpecError(f"{where}: '{key}' must be a positive whole number of tokens; fix the line")
            return value
    return None


def read_replay(path: str | Path) -> list[Arrival]:
    """The arrivals of a replay file, in time order, the first at 0."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_REPLAY_BYTES:
            raise SpecError(f"{p}: replay file over {MAX_REPLAY_BYTES >> 20} MiB; pass a shorter one")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the replay file ({getattr(exc, 'strerror', None) or exc}); "
                        "pass a readable text file of arrival times") from None
    out: list[Arrival] = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{p}:{n}"
        try:
            value = json.loads(line)
        except ValueError:
            raise SpecError(f"{where}: not a number or a JSON object; write seconds or "
                            '{"timestamp": seconds}') from None
        if isinstance(value, dict):
            if "timestamp_ms" in value:
                t, scale = value["timestamp_ms"], 1e-3
            else:
                t, scale = value.get("timestamp"), 1.0
            arrival_in = _int_field(value, ("input_tokens", "input_length"), where)
            arrival_out = _int_field(value, ("output_tokens", "output_length"), where)
        else:
            t, scale, arrival_in, arrival_out = value, 1.0, None, None
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise SpecError(f"{where}: the arrival time must be a finite number >= 0; fix the line")
        out.append(Arrival(float(t) * scale, arrival_in, arrival_out))
    if not out:
        raise SpecError(f"{p}: no arrival times; write one per line")
    out.sort(key=lambda a: a.time_s)
    first = out[0].time_s
    return [Arrival(a.time_s - first, a.input_tokens, a.output_tokens) for a in out]
