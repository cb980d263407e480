"""Checks of a serving bench before it runs: a closed-loop stage of N requests at concurrency c
lives about N / c request lifetimes, and its throughput, goodput and cost are tested on windows
at least one request lifetime long (measurements/run_samples.py): fewer than MIN_SAMPLES windows
and the gate cannot decide them (inconclusive). Said when the bench is planned, with the count
that would do. Stages bounded by time or open-loop rates depend on the server's latency, which
is not known before: not checked."""

from __future__ import annotations

from perfkit.workloads.serving.client.plan import DEFAULT_REQUESTS
from perfkit.workloads.serving.measurements.run_samples import MIN_SAMPLES, WINDOWS
from perfkit.workloads.serving.spec import ServingSpec


def window_shortfalls(spec: ServingSpec) -> list[str]:
    """One line per closed-loop stage whose requests give fewer windows than the gate needs."""
    if spec.load.concurrency is None or spec.duration_s is not None:
        return []
    n = spec.requests or DEFAULT_REQUESTS
    out = []
    for c in spec.load.concurrency:
        windows = n // c
        if windows < MIN_SAMPLES:
            out.append(f"stage concurrency={c}: {n} requests give at most {windows} window"
                       f"{'s' if windows != 1 else ''} of a request's lifetime; the gate needs {MIN_SAMPLES} to "
                       f"test throughput, goodput and cost (else inconclusive): use --requests {MIN_SAMPLES * c} "
                       f"or more ({WINDOWS * c} for {WINDOWS} windows)")
    return out
