"""Is a load test measuring the client rather than the server? A pure verdict.

The client's own delays (event-loop lag, the GIL, the machine's scheduler) delay every timestamp
it takes, and a loaded client sends late. Lag alone says nothing about the numbers: 3 ms of lag
next to a 40 ms TTFT whose p50 it moves by 0.1 ms is harmless. So the verdict reads the error the
lag can cause (measurements/client_error.py: a stated bound per number) and calls a stage
client-bound when either
- a bound is material: larger than `MATERIAL_SHARE` of its number AND larger than `FLOOR_S`
  (below the floor the client's error is under what the network and the server's own intake
  already add on loopback, measured in benchmarks/results/serving_client_error-vm.md) AND larger
  than the number's own sampling uncertainty (ErrorBound.noise_s: the half-width of its 95%
  interval from its samples; an error inside it cannot change what the stage's sample says, a
  TTFT p99 of 16 requests being the largest of them), or
- in an open-loop (rate) stage, send lateness p99 > `LATE_SHARE` x the mean inter-arrival time
  (lateness: when the request left the client minus when it was due): the offered load was not
  the one asked for, which no latency bound covers.
A client-bound stage is shown as such in every view, and the gate refuses to compare it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perfkit.workloads.serving.measurements.client_error import ErrorBound, error_bounds
from perfkit.workloads.serving.records import RequestRecord

MATERIAL_SHARE = 0.02
FLOOR_S = 1.0e-3
LATE_SHARE = 0.10

_NAMES = {"ttft_p50_s": "TTFT p50", "ttft_p99_s": "TTFT p99", "tpot_p50_s": "TPOT p50",
          "token_itl_p50_s": "ITL p50", "token_itl_p99_s": "ITL p99", "e2e_p50_s": "E2E p50"}


def p99(values: Sequence[float]) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=np.float64), 99)) if len(values) else None


def _ms(x: float) -> str:
    return f"{x * 1e3:.2g}" if x < 0.01 else f"{x * 1e3:.3g}"


def material(b: ErrorBound) -> bool:
    """The bound could move its number by more than the share, the floor and the number's own
    sampling uncertainty."""
    return b.bound_s > max(FLOOR_S, MATERIAL_SHARE * abs(b.value_s), b.noise_s)


def bounds_note(bounds: Sequence[ErrorBound]) -> str | None:
    """`client error bound: TTFT p50 +-0.4 ms, ...` (one line for the stage's notes), None when none."""
    if not bounds:
        return None
    return "client error bound: " + ", ".join(f"{_NAMES.get(b.metric, b.metric)} +-{_ms(b.bound_s)} ms" for b in bounds)


def client_bound_reason(bounds: Sequence[ErrorBound], lateness_s: Sequence[float],
                        mean_interarrival_s: float | None) -> str | None:
    """Why the stage measured the client (one line), or None when it did not."""
    reasons = [f"the client's delays can move {_NAMES.get(b.metric, b.metric)} {_ms(b.value_s)} ms by up to "
               f"{_ms(b.bound_s)} ms (> {MATERIAL_SHARE:.0%}, > {_ms(FLOOR_S)} ms and > its sampling uncertainty "
               f"{_ms(b.noise_s)} ms)" for b in bounds if material(b)]
    late = p99(lateness_s)
    if late is not None and mean_interarrival_s and mean_interarrival_s > 0 and late > LATE_SHARE * mean_interarrival_s:
        reasons.append(f"sends late by {_ms(late)} ms (p99) > {LATE_SHARE:.0%} of the mean inter-arrival "
                       f"time {_ms(mean_interarrival_s)} ms")
    if not reasons:
        return None
    return "client-bound: " + "; ".join(reasons) + ": use fewer concurrent requests per client process or a faster client machine"


def stage_verdict(records: Sequence[RequestRecord], lag_s: Sequence[float], lateness_s: Sequence[float],
                  mean_interarrival_s: float | None) -> tuple[list[ErrorBound], str | None]:
    """The stage's error bounds and its client-bound reason (None: not client-bound)."""
    bounds = error_bounds(records, lag_s)
    return bounds, client_bound_reason(bounds, lateness_s, mean_interarrival_s)
