"""Checks of a serving bench before it runs: a closed-loop stage of N requests at concurrency c
lives about N / c request lifetimes, and its throughput, goodput and cost are tested on windows
at least one request lifetime long (measurements/run_samples.py): fewer than MIN_SAMPLES windows
and the gate cannot decide them (inconclusive). Said when the bench is planned, with the count
that would do. Stages bounded by time or open-loop rates depend on the server's latency, which
is not known before: not checked. Client processes that crowd the cores (client/processes.py)
are said too."""

from __future__ import annotations

from perfkit.workloads.serving.client.plan import DEFAULT_REQUESTS
from perfkit.workloads.serving.client.processes import cores, crowded_reason, local_server
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


def processes_warning(spec: ServingSpec) -> list[str]:
    """One line when the bench's client processes (with a server on this machine) crowd its cores."""
    if spec.endpoint is None:
        return []
    reason = crowded_reason(spec.client.processes, cores(), local_server(spec.endpoint))
    return [reason] if reason else []
