"""When each request of an open-loop stage arrives: Poisson or gamma gaps, or a replay file.

Gaps between arrivals are gamma-distributed with shape = burstiness and mean 1 / rate (shape 1:
exponential gaps, a Poisson process; below 1: burstier; above 1: more regular), as vLLM's
`--burstiness`. The first request arrives at 0. A replay file gives the arrival times itself:
one number per line (seconds), or JSON lines with `timestamp` (seconds) or `timestamp_ms`
(Mooncake traces) and optionally `input_length` / `input_tokens`, `output_length` /
`output_tokens`; times are shifted so the first is 0. A Mooncake trace (JSON lines that each
carry `hash_ids`: client/mooncake.py) gives `timestamp` in milliseconds and each prompt's blocks;
every line of it is checked. Arrivals out of time order are sorted (stably; `order_note` says so).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfkit.core.errors import SpecError
from perfkit.workloads.serving.client.mooncake import DEFAULT_BLOCK_SIZE, mooncake_line

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
    hash_ids: tuple[int, ...] | None = None  # a Mooncake trace's blocks of the prompt
    line: int = 0  # the file's line



def _int_field(obj: dict[str, object], keys: tuple[str, ...], where: str) -> int | None:
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 10_000_000:
                raise SpecError(f"{where}: '{key}' must be a positive whole number of tokens; fix the line")
            return value
    return None


def read_replay(path: str | Path, block_size: int = DEFAULT_BLOCK_SIZE) -> list[Arrival]:
    """The arrivals of a replay file, in time order, the first at 0 (`block_size`: the prompt
    tokens of one hash id in a Mooncake trace)."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_REPLAY_BYTES:
            raise SpecError(f"{p}: replay file over {MAX_REPLAY_BYTES >> 20} MiB; pass a shorter one")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: cannot read the replay file ({getattr(exc, 'strerror', None) or exc}); "
                        "pass a readable text file of arrival times") from None
    out: list[Arrival] = []
    traced: bool | None = None  # the file is a Mooncake trace (its first line says)
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
        has_ids = isinstance(value, dict) and "hash_ids" in value
        if traced is None:
            traced = has_ids
        elif has_ids != traced:
            raise SpecError(f"{where}: {'hash_ids on this line only' if has_ids else 'no hash_ids on this line'}; "
                            "a Mooncake trace gives hash_ids on every line, fix the line")
        if has_ids:
            assert isinstance(value, dict)
            time_s, n_in, n_out, ids = mooncake_line(value, block_size, where)
            out.append(Arrival(time_s, n_in, n_out, ids, n))
            continue
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
        out.append(Arrival(float(t) * scale, arrival_in, arrival_out, line=n))
    if not out:
        raise SpecError(f"{p}: no arrival times; write one per line")
    out.sort(key=lambda a: a.time_s)
    first = out[0].time_s
    return [Arrival(a.time_s - first, a.input_tokens, a.output_tokens, a.hash_ids, a.line) for a in out]


def order_note(path: str | Path, arrivals: list[Arrival]) -> str | None:
    """A note when the file's lines were not in time order (read_replay sorted them), else None."""
    for before, after in itertools.pairwise(arrivals):
        if after.line < before.line:
            return (f"{path}:{before.line}: arrives before line {after.line} above it (times out of order); "
                    "replayed sorted by time")
    return None
