"""How far the client's delays can have moved each number, from the lag around each of its reads.

Every stamp the client took is read late by at most L(t), the lag of the probe samples around it
(measurements/read_delay.py). Each value is a difference of two stamps, so its error lies in a
known interval [lo_i, hi_i]:
- TTFT = first token - send: [-S(send), L(first token)]: a late read of the token lengthens it;
  the send is stamped by aiohttp's hook right after its headers were written, with no wait on
  the loop in between, so only a thread switch (the GIL) or the machine's scheduler can make that
  stamp late and shorten it: S(t) is the lag of the thread probe's samples around t (the loop
  probe's queue waits do not apply); without probe kinds S = L;
- E2E = last token - send: [-S(send), L(last token)];
- TPOT = (last - first) / (n - 1): [-L(first), L(last)] / (n - 1);
- per-token ITL: a chunk of k tokens after the chunk before gives k gaps (t - t_prev) / k, each
  in [-L(t_prev), L(t)] / k (latency.token_itls_s, the same values in the same order).
A quantile is nondecreasing in every value, so with x_i in [y_i - hi_i, y_i - lo_i] for the
measured y_i:

    Q(y - hi) <= Q(x) <= Q(y - lo),  |Q(y) - Q(x)| <= max(Q(y) - Q(y - hi), Q(y - lo) - Q(y))

for the same q (numpy's "linear" quantile is nondecreasing in every value too). A value read in a
quiet moment keeps a small interval whatever the tail of the lag did elsewhere; a stall shifts only
the values whose stamps it touched, and moves a quantile only as far as it moves those values past
their neighbours. Two reads of an ITL gap delayed alike cancel in the gap itself; the interval
keeps both ends, so this bound does not claim that.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby, pairwise

import numpy as np

from perfkit.workloads.serving.measurements.client_error import (
    BOUNDED,
    FROM_READS,
    ErrorBound,
    family,
    sampling_half_width,
)
from perfkit.workloads.serving.measurements.latency import quantile
from perfkit.workloads.serving.measurements.read_delay import read_delays_s
from perfkit.workloads.serving.records import RequestRecord

Intervals = tuple[list[float], list[float], list[float]]  # values, lo, hi


def perturbed_quantile_bound(values: Sequence[float], lo: Sequence[float], hi: Sequence[float], q: float) -> float:
    """max(Q(y) - Q(y - hi), Q(y - lo) - Q(y)): how far the q-quantile of the true values can be
    from that of the measured `values` when each true value lies in [y_i - hi_i, y_i - lo_i]."""
    if not values:
        raise ValueError("an error bound of no values")
    y = np.asarray(values, dtype=np.float64)
    here = quantile(y.tolist(), q)
    low = quantile((y - np.asarray(hi, dtype=np.float64)).tolist(), q)
    high = quantile((y - np.asarray(lo, dtype=np.float64)).tolist(), q)
    return max(here - low, high - here, 0.0)


def _intervals(records: Sequence[RequestRecord], delay: dict[float, float],
               send_delay: dict[float, float]) -> dict[str, Intervals]:
    out: dict[str, Intervals] = {k: ([], [], []) for k in ("ttft", "tpot", "token_itl", "e2e")}

    def add(key: str, value: float, lo: float, hi: float) -> None:
        vals, los, his = out[key]
        vals.append(value)
        los.append(lo)
        his.append(hi)

    for r in records:
        times = r.token_times_s
        if r.sent_s is None or not times:
            continue
        send = send_delay[r.sent_s]
        add("ttft", times[0] - r.sent_s, -send, delay[times[0]])
        add("e2e", times[-1] - r.sent_s, -send, delay[times[-1]])
        n = len(times)
        if n > 1:
            add("tpot", (times[-1] - times[0]) / (n - 1), -delay[times[0]] / (n - 1), delay[times[-1]] / (n - 1))
        chunks = [(t, len(list(run))) for t, run in groupby(times)]
        for (prev, _), (t, k) in pairwise(chunks):
            for _ in range(k):
                add("token_itl", (t - prev) / k, -delay[prev] / k, delay[t] / k)
    return out


def read_error_bounds(records: Sequence[RequestRecord], lag_s: Sequence[float], lag_times_s: Sequence[float],
                      lag_on_thread: Sequence[bool] | None = None) -> list[ErrorBound]:
    """The bound of each number in BOUNDED the stage has (succeeded requests outside a profiling
    window, as the stage's numbers are computed), in BOUNDED's order. `lag_on_thread`: which
    samples the thread probe took (sends are bounded by those alone, module doc)."""
    ok = [r for r in records if r.ok and not r.in_profile_window and r.sent_s is not None]
    reads = sorted({t for r in ok for t in r.token_times_s})
    sends = sorted({r.sent_s for r in ok if r.sent_s is not None})
    delay = dict(zip(reads, read_delays_s(reads, lag_s, lag_times_s).tolist(), strict=True))
    if lag_on_thread is not None and len(lag_on_thread) == len(lag_s) and any(lag_on_thread):
        thread = [i for i, k in enumerate(lag_on_thread) if k]
        send_lag = read_delays_s(sends, [lag_s[i] for i in thread], [lag_times_s[i] for i in thread])
    else:
        send_lag = read_delays_s(sends, lag_s, lag_times_s)
    intervals = _intervals(ok, delay, dict(zip(sends, send_lag.tolist(), strict=True)))
    out = []
    for key, q in BOUNDED.items():
        values, lo, hi = intervals[family(key)]
        if values:
            out.append(ErrorBound(key, quantile(values, q), perturbed_quantile_bound(values, lo, hi, q),
                                  sampling_half_width(values, q), FROM_READS))
    return out
