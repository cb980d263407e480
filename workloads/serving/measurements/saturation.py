"""Did an open-loop stage offer more than the server can serve? A pure verdict.

A server that keeps up with the offered rate serves a request soon after it arrives, whenever it
arrives; one that does not queues them, and each request waits longer than the one before. So:
among the successful requests in arrival order, the median time to first token from the
scheduled arrival of the last quarter is compared with the first quarter's. Saturated when it
is more than twice as long AND longer by more than ten median TPOTs (a wait no decode jitter
explains). The stage's throughput is then the server's ceiling, not the offered rate, and every
"from schedule" latency grows with the stage's length: the rate sweep has passed saturation.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from perfkit.workloads.serving.measurements.latency import tpot_s, ttft_sched_s
from perfkit.workloads.serving.records import RequestRecord

MIN_REQUESTS = 8  # fewer successful requests: no verdict


def saturation_reason(records: Sequence[RequestRecord], offered_rate_per_s: float) -> str | None:
    """One line when the stage saturated the server, else None."""
    ok = sorted((r for r in records if r.ok), key=lambda r: r.scheduled_s)
    if len(ok) < MIN_REQUESTS:
        return None
    quarter = len(ok) // 4
    waits = [ttft_sched_s(r) for r in ok]
    first = statistics.median(w for w in waits[:quarter] if w is not None)
    last = statistics.median(w for w in waits[-quarter:] if w is not None)
    tpots = [t for t in (tpot_s(r) for r in ok) if t is not None]
    step = statistics.median(tpots) if tpots else 0.0
    if last > 2 * first and last - first > 10 * step:
        return (f"saturated: at {offered_rate_per_s:g} requests/s offered the time to first token from "
                f"arrival grew from {first * 1e3:.3g} ms (first quarter) to {last * 1e3:.3g} ms (last quarter); "
                "the server cannot keep up: its throughput here is its ceiling")
    return None
