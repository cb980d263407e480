"""Is a load test measuring the client rather than the server? A pure verdict.

The client's own delays (event-loop lag, the GIL, the machine's scheduler) delay every timestamp
it takes, and a loaded client sends late. Lag alone says nothing about the numbers: 3 ms of lag
next to a 40 ms TTFT whose p50 it moves by 0.1 ms is harmless. So the verdict reads the client's
error per number, the best way the stage allows:
- measured, where the server stamps its chunks (measurements/stamp_error.py: the client's number
  minus the same number from the server's stamps);
- measured, where the kernel stamped the client's reads (measurements/rx_error.py: minus the same
  number from the kernel's receive stamps; any server, on Linux);
- else bounded from the lag around each read (measurements/read_error.py: the probe samples with
  their times);
- else bounded from the lag's distribution alone (measurements/client_error.py);
and calls a stage client-bound when either
- an error is material: larger than `MATERIAL_SHARE` of its number AND larger than `FLOOR_S`
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

from perfkit.workloads.serving.measurements.client_error import (
    MEASURED,
    ErrorBound,
    error_bounds,
)
from perfkit.workloads.serving.measurements.read_error import read_error_bounds
from perfkit.workloads.serving.measurements.rx_error import rx_errors
from perfkit.workloads.serving.measurements.stamp_error import stamp_errors
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


def _signed_ms(x: float) -> str:
    return ("+" if x >= 0 else "-") + _ms(abs(x))


def bounds_note(bounds: Sequence[ErrorBound]) -> str | None:
    """One line for the stage's notes, None when none: `client error (server stamps): TTFT p50
    +0.4 ms, ...` where measured, `client error bound (lag around each read): TTFT p50 +-0.4 ms,
    ...` where bounded."""
    if not bounds:
        return None
    source = bounds[0].source
    if source in MEASURED:
        return f"client error ({source}): " + ", ".join(
            f"{_NAMES.get(b.metric, b.metric)} {_signed_ms(b.measured_s if b.measured_s is not None else b.bound_s)} ms"
            for b in bounds)
    return f"client error bound ({source}): " + ", ".join(
        f"{_NAMES.get(b.metric, b.metric)} +-{_ms(b.bound_s)} ms" for b in bounds)


def _reason(b: ErrorBound) -> str:
    name, rule = _NAMES.get(b.metric, b.metric), (f"> {MATERIAL_SHARE:.0%}, > {_ms(FLOOR_S)} ms and > its sampling "
                                                  f"uncertainty {_ms(b.noise_s)} ms")
    if b.source in MEASURED:
        error = b.measured_s if b.measured_s is not None else b.bound_s
        return f"the client's reads moved {name} {_ms(b.value_s)} ms by {_signed_ms(error)} ms ({b.source}; {rule})"
    return f"the client's delays can move {name} {_ms(b.value_s)} ms by up to {_ms(b.bound_s)} ms ({b.source}; {rule})"


def client_bound_reason(bounds: Sequence[ErrorBound], lateness_s: Sequence[float],
                        mean_interarrival_s: float | None) -> str | None:
    """Why the stage measured the client (one line), or None when it did not."""
    reasons = [_reason(b) for b in bounds if material(b)]
    late = p99(lateness_s)
    if late is not None and mean_interarrival_s and mean_interarrival_s > 0 and late > LATE_SHARE * mean_interarrival_s:
        reasons.append(f"sends late by {_ms(late)} ms (p99) > {LATE_SHARE:.0%} of the mean inter-arrival "
                       f"time {_ms(mean_interarrival_s)} ms")
    if not reasons:
        return None
    return "client-bound: " + "; ".join(reasons) + ": use fewer concurrent requests per client process or a faster client machine"


def client_errors(records: Sequence[RequestRecord], lag_s: Sequence[float], lag_times_s: Sequence[float] | None = None,
                  t0_monotonic_s: float | None = None, lag_on_thread: Sequence[bool] | None = None) -> list[ErrorBound]:
    """The client's error per number, the best way the stage allows (module doc): measured
    against the server's stamps (needs t0_monotonic_s), else against the kernel's receive stamps,
    else bounded per read (needs the lag samples' times), else from the lag's distribution."""
    if t0_monotonic_s is not None:
        measured = stamp_errors(records, t0_monotonic_s)
        if measured is not None:
            return measured
    received = rx_errors(records)
    if received is not None:
        return received
    if lag_times_s is not None and len(lag_times_s) == len(lag_s):
        return read_error_bounds(records, lag_s, lag_times_s, lag_on_thread)
    return error_bounds(records, lag_s)


def stage_verdict(records: Sequence[RequestRecord], lag_s: Sequence[float], lateness_s: Sequence[float],
                  mean_interarrival_s: float | None, lag_times_s: Sequence[float] | None = None,
                  t0_monotonic_s: float | None = None,
                  lag_on_thread: Sequence[bool] | None = None) -> tuple[list[ErrorBound], str | None]:
    """The stage's client errors (client_errors) and its client-bound reason (None: not client-bound)."""
    bounds = client_errors(records, lag_s, lag_times_s, t0_monotonic_s, lag_on_thread)
    return bounds, client_bound_reason(bounds, lateness_s, mean_interarrival_s)
