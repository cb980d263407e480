"""How far the load client's own delays can have moved a stage's numbers: a stated bound per number.

The model. Every time the client takes (a request's send, a chunk's arrival) is read late by a
delay L >= 0: the time the event loop or the GIL kept the reader waiting. The lag probes
(client/lag.py) sample L's distribution while the stage runs. A latency is a difference of two
stamps, so it is shifted by D = L_b - L_a, and |D| <= max(L_a, L_b):
- TTFT = first token - send: D = L_token - L_send; E2E = last token - send: the same.
- per-token ITL: a chunk of k tokens after the previous chunk gives k gaps shifted by
  (L_i - L_(i-1)) / k; the bound takes k = 1 (the widest).
- TPOT = (last token - first token) / (n - 1): D = (L_last - L_first) / (n - 1); the bound takes
  the smallest n - 1 of the stage's requests.
Hence P(|D| > b x scale) <= 2 P(L > b) (a union bound over the two stamps; scale 1, or
1 / (n - 1) for TPOT).

The rule (one, for every number). If P(|D| > b) <= e, the q-quantile of the measured values Y
and of the true values X satisfy Q_X(q - e) - b <= Q_Y(q) <= Q_X(q + e) + b (a union bound:
P(X + D > a + b) <= P(X > a) + P(|D| > b)). Turned around, with the measured quantiles in the
place of the unknown true ones:

    |Q_Y(q) - Q_X(q)| <= b_e + max(Q_Y(q) - Q_Y(q - e), Q_Y(q + e) - Q_Y(q)),
    b_e = scale x Q_L(1 - e / 2)

and the stated bound is the smallest over the splits e in `SPLITS` (each one is a valid bound:
so is their minimum). A small e pays the lag's far tail and no spread; a larger e pays the
metric's spread around q and a lower lag quantile. The split e = 0 is the plain one: no stamp was
later than the largest lag sampled, so no quantile moved by more (order statistics move at most
as far as the samples do); it is the bound of a TTFT p99 of 16 requests. With n samples the share
of them shifted more than b is itself random, so the spread is taken at q +- e', e' = e +
Z sqrt(e (1 - e) / n) (sample_share). Quantiles are numpy's "linear" ones
(measurements/latency.py), q +- e' clipped to [0, 1].

This is the fallback when the probes' samples carry no times; with them the bound is per read
(measurements/read_error.py), and where the server stamps its chunks the error is measured
(measurements/stamp_error.py).

What it assumes: the lag at the moments the client read its stamps is distributed as the
probes' samples (the probes run all through the stage, every 5 ms, on the loop and on a thread).
What it leaves out: delays outside the client (the network, the server's own intake), which no
client-side sample sees; the materiality rule (client_bound.py) has a floor for them. What it
does not use: that consecutive reads' delays largely cancel in a gap, and when the lag happened
(the probes' samples carry no time): an ITL p50 bound is therefore often several times its
actual error (benchmarks/results/serving_client_error-vm.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.workloads.serving.measurements.latency import (
    e2e_s,
    per_request,
    pooled,
    quantile,
    token_itls_s,
    tpot_s,
    ttft_s,
)
from perfkit.workloads.serving.records import RequestRecord

SPLITS = (0.0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)  # e: the share of samples let go
Z = 3.0  # standard errors of the share of samples past the lag quantile (sample_share)
Z_NOISE = 1.96  # a 95% interval for the sampling half-width
STAMPS = 2  # stamps per latency (two ends): P(|D| > b) <= 2 P(L > b)

# the numbers bounded: metric key -> quantile of its samples
BOUNDED: dict[str, float] = {"ttft_p50_s": 0.5, "ttft_p99_s": 0.99, "tpot_p50_s": 0.5, "token_itl_p50_s": 0.5,
                             "token_itl_p99_s": 0.99, "e2e_p50_s": 0.5}


# where a stage's client errors come from (ErrorBound.source), best first
FROM_STAMPS = "server stamps"  # measured: the client's number minus the one from the server's stamps
FROM_RX = "kernel receive stamps"  # measured: ... minus the one from the kernel's receive stamps (rx_error.py)
MEASURED = (FROM_STAMPS, FROM_RX)  # the sources that measure the error rather than bound it
FROM_READS = "lag around each read"  # bounded: measurements/read_error.py
FROM_LAG = "lag distribution"  # bounded: this module (probe samples without their times)


@dataclass(frozen=True)
class ErrorBound:
    """The client's error on one number: |measured - true| <= bound_s (stated from the lag), or
    = bound_s (measured against a server's stamps: `measured_s` holds it with its sign)."""

    metric: str  # its metric key (ttft_p50_s, ...)
    value_s: float  # the number as measured
    bound_s: float
    # the half-width of the number's own 95% distribution-free interval from its samples
    # (sampling_half_width): what the stage's sample size leaves uncertain anyway
    noise_s: float = 0.0
    source: str = FROM_LAG
    measured_s: float | None = None  # FROM_STAMPS: client number - the stamps' number


def stage_samples(records: Sequence[RequestRecord]) -> dict[str, list[float]]:
    """The values each number in BOUNDED is a quantile of ("ttft", "tpot", "token_itl", "e2e"):
    succeeded requests outside a profiling window, as the stage's numbers are computed."""
    ok = [r for r in records if r.ok and not r.in_profile_window]
    return {"ttft": per_request(ok, ttft_s), "tpot": per_request(ok, tpot_s),
            "token_itl": pooled(ok, token_itls_s), "e2e": per_request(ok, e2e_s)}


def family(metric: str) -> str:
    """"ttft_p50_s" -> "ttft" (the key of stage_samples)."""
    return metric.rsplit("_", 2)[0]


def sample_share(e: float, n: int) -> float:
    """The share of n samples whose shift may pass b when each does with probability e: e plus
    Z standard errors of a binomial share (so few samples pay a wider rank margin)."""
    return e + Z * math.sqrt(e * (1.0 - e) / n)


def sampling_half_width(values: Sequence[float], q: float) -> float:
    """How far the q-quantile of these samples may be from the population's by sampling alone:
    max(Q(q) - Q(q - h), Q(q + h) - Q(q)), h = Z_NOISE sqrt(q (1 - q) / n) (the normal
    approximation of the binomial rank interval, distribution-free), q +- h clipped to [0, 1]."""
    h = Z_NOISE * math.sqrt(q * (1.0 - q) / len(values))
    here = quantile(values, q)
    return max(here - quantile(values, max(q - h, 0.0)), quantile(values, min(q + h, 1.0)) - here)


def quantile_error_bound(values: Sequence[float], q: float, lag_s: Sequence[float], scale: float = 1.0) -> float:
    """The bound on |Q_Y(q) - Q_X(q)| for measured values Y (see the module doc); `scale` multiplies
    the lag (1 / (n - 1) for TPOT). 0 when there is no lag sample (nothing says the client was late)."""
    if not values:
        raise ValueError("an error bound of no values")
    if not lag_s:
        return 0.0
    here = quantile(values, q)
    best = float("inf")
    for e in SPLITS:
        share = sample_share(e, len(values))
        spread = max(here - quantile(values, max(q - share, 0.0)), quantile(values, min(q + share, 1.0)) - here)
        best = min(best, scale * quantile(lag_s, 1.0 - e / STAMPS) + spread)
    return best


def error_bounds(records: Sequence[RequestRecord], lag_s: Sequence[float]) -> list[ErrorBound]:
    """The bound of each number in BOUNDED the stage has (succeeded requests outside a profiling
    window, as the stage's numbers are computed), in BOUNDED's order."""
    ok = [r for r in records if r.ok and not r.in_profile_window]
    samples = stage_samples(ok)
    timed = [len(r.token_times_s) - 1 for r in ok if len(r.token_times_s) > 1]
    out = []
    for key, q in BOUNDED.items():
        values = samples[family(key)]
        if not values:
            continue
        scale = 1.0 / min(timed) if key.startswith("tpot") and timed else 1.0
        out.append(ErrorBound(key, quantile(values, q), quantile_error_bound(values, q, lag_s, scale),
                              sampling_half_width(values, q)))
    return out
