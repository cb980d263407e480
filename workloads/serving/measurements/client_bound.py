"""Is a load test measuring the client rather than the server? A pure verdict.

The client's own event-loop lag delays every timestamp it takes, and a loaded client sends late.
A stage is client-bound when either is a material share of what it measured:
- loop lag p99 > `LAG_SHARE` x the stage's ITL p50 (per-token ITL, else chunk gaps), or
- in an open-loop (rate) stage, send lateness p99 > `LATE_SHARE` x the mean inter-arrival time
  (lateness: when the request left the client minus when it was due, i.e. its arrival or, under
  a concurrency cap, the moment a slot freed).
A client-bound stage is shown as such in every view, and the gate refuses to compare it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

LAG_SHARE = 0.10
LATE_SHARE = 0.10


def p99(values: Sequence[float]) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=np.float64), 99)) if len(values) else None


def client_bound_reason(lag_s: Sequence[float], itl_p50_s: float | None, lateness_s: Sequence[float],
                        mean_interarrival_s: float | None) -> str | None:
    """Why the stage measured the client (one line), or None when it did not."""
    reasons = []
    lag = p99(lag_s)
    if lag is not None and itl_p50_s and itl_p50_s > 0 and lag > LAG_SHARE * itl_p50_s:
        reasons.append(f"client event-loop lag p99 {lag * 1e3:.3g} ms > {LAG_SHARE:.0%} of ITL p50 "
                       f"{itl_p50_s * 1e3:.3g} ms")
    late = p99(lateness_s)
    if late is not None and mean_interarrival_s and mean_interarrival_s > 0 and late > LATE_SHARE * mean_interarrival_s:
        reasons.append(f"sends late by {late * 1e3:.3g} ms (p99) > {LATE_SHARE:.0%} of the mean inter-arrival "
                       f"time {mean_interarrival_s * 1e3:.3g} ms")
    if not reasons:
        return None
    return "client-bound: " + "; ".join(reasons) + ": use fewer concurrent requests per client process or a faster client machine"
