"""How late the client can have read each of its stamps: the lag around that moment.

The lag probes (client/lag.py) give samples (t_j, l_j): a probe that ended at t_j (seconds from the
stage's t0) had waited l_j, so the client was busy (its loop, the GIL, or waiting for a core) over
[t_j - l_j, t_j]. A stamp read at t was late by the time the client was busy just before t. The
probes run every `client/lag.INTERVAL_S` (5 ms) on the loop and on a thread, so every moment lies
within a few milliseconds of samples of both; the delay of a read at t is bounded by the largest
lag of the samples around it:

    L(t) = max { l_j : t_j - l_j - BRACKET_S <= t <= t_j + BRACKET_S }

BRACKET_S = 2 x INTERVAL_S: the samples of each probe that bracket t (the one before and the one
after). A read with no sample around it (the probes starved, or before the first one) takes the
largest lag of the stage. The rule is an estimate from samples, not a proof: a stall shorter
than the probes' interval that fell between two samples is not seen, which is why its validity is
measured against a server's own stamps (benchmarks/serving_client_error.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BRACKET_S = 0.010  # 2 x the probes' interval (client/lag.INTERVAL_S, 5 ms)


def read_delays_s(read_at_s: Sequence[float] | np.ndarray, lag_s: Sequence[float],
                  lag_times_s: Sequence[float]) -> np.ndarray:
    """L(t) for each read time t (module doc); zeros when there is no lag sample (nothing says
    the client was late)."""
    reads = np.asarray(read_at_s, dtype=np.float64)
    if len(lag_s) != len(lag_times_s):
        raise ValueError(f"{len(lag_s)} lag samples but {len(lag_times_s)} sample times")
    if not len(lag_s):
        return np.zeros(len(reads))
    lags = np.asarray(lag_s, dtype=np.float64)
    ends = np.asarray(lag_times_s, dtype=np.float64)
    # each sample as points at most BRACKET_S apart over its busy stretch [t_j - l_j, t_j] (its
    # end, every BRACKET_S back, its start): a moment lies in [t_j - l_j - BRACKET_S, t_j +
    # BRACKET_S] exactly when it is within BRACKET_S of one of them, so L(t) is the largest lag of
    # the points within BRACKET_S of t: one range maximum per read
    steps = np.ceil(lags / BRACKET_S).astype(np.int64)
    which = np.repeat(np.arange(len(lags)), steps + 1)
    back = np.minimum((np.arange(len(which)) - np.repeat(np.cumsum(steps + 1) - (steps + 1), steps + 1)) * BRACKET_S,
                      lags[which])
    points, point_lags = ends[which] - back, lags[which]
    order = np.argsort(points, kind="stable")
    points, point_lags = points[order], point_lags[order]
    lo = np.searchsorted(points, reads - BRACKET_S, side="left")
    hi = np.searchsorted(points, reads + BRACKET_S, side="right")
    out = _range_max(point_lags, lo, hi)
    return np.where(out < 0.0, float(np.max(lags)), out)


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo_i:hi_i]) for every i (a sparse table); -1 for an empty range."""
    table = [values]
    width = 1
    while 2 * width <= len(values):
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    n = hi - lo
    out = np.full(len(lo), -1.0)
    some = n > 0
    level = np.zeros(len(lo), dtype=np.int64)
    level[some] = np.floor(np.log2(n[some])).astype(np.int64)
    for k in np.unique(level[some]):
        idx = np.flatnonzero(some & (level == k))
        row = table[k]
        out[idx] = np.maximum(row[lo[idx]], row[hi[idx] - (1 << k)])
    return out
