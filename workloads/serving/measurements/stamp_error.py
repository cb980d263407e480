"""The client's error per number, measured against the server's own stamps where it gives them.

`perfkit serve` stamps every chunk it writes (measurements/served_records.py). The same number
computed with each token at the server's stamp and the send at the client's own stamp is what a
client that read every chunk the instant the server wrote it would have reported; the client's
number minus it is the error of the client's reads (plus the loopback or network transit of a
chunk, which any client pays). What happens before the server's handler sees a request (the
network in, the server's own intake) is left out on purpose: it is part of the latency a user
sees, no client error, and a client cannot remove it (its size is said apart:
`intake_p50_s`).

Used only when every succeeded request carries stamps for exactly the tokens the client timed;
otherwise a stage falls back to the bound from the lag (measurements/read_error.py).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from perfkit.workloads.serving.measurements.client_error import (
    BOUNDED,
    FROM_STAMPS,
    ErrorBound,
    family,
    sampling_half_width,
    stage_samples,
)
from perfkit.workloads.serving.measurements.latency import quantile
from perfkit.workloads.serving.measurements.served_records import as_served
from perfkit.workloads.serving.records import RequestRecord


def read_side(records: Sequence[RequestRecord], t0_monotonic_s: float) -> list[RequestRecord] | None:
    """The succeeded records (outside a profiling window) with every token at the server's stamp
    and the send at the client's; None unless every one of them has stamps for its timed tokens."""
    ok = [r for r in records if r.ok and not r.in_profile_window]
    served = as_served(ok, t0_monotonic_s)
    if not ok or len(served) != len(ok):
        return None
    out = []
    for mine, theirs in zip(ok, served, strict=True):
        if len(theirs.token_times_s) != len(mine.token_times_s):
            return None
        out.append(dataclasses.replace(theirs, sent_s=mine.sent_s))
    return out


def intake_p50_s(records: Sequence[RequestRecord], t0_monotonic_s: float) -> float | None:
    """Median of (server received - client sent): the network in and the server's intake."""
    ok = {r.index: r for r in records if r.ok and r.sent_s is not None}
    gaps = [s.sent_s - sent for s in as_served(list(ok.values()), t0_monotonic_s)
            if s.sent_s is not None and (sent := ok[s.index].sent_s) is not None]
    return statistics.median(gaps) if gaps else None


def stamp_errors(records: Sequence[RequestRecord], t0_monotonic_s: float) -> list[ErrorBound] | None:
    """Each number in BOUNDED the stage has, with its measured error (FROM_STAMPS); None when the
    records do not all carry the server's stamps."""
    truth = read_side(records, t0_monotonic_s)
    return None if truth is None else errors_against(records, truth, FROM_STAMPS)


def errors_against(records: Sequence[RequestRecord], truth: Sequence[RequestRecord], source: str) -> list[ErrorBound]:
    """Each number in BOUNDED with its measured error: the client's number minus the same number
    from `truth` (the same requests with their times from `source`)."""
    mine, theirs = stage_samples(records), stage_samples(truth)
    out = []
    for key, q in BOUNDED.items():
        values, true_values = mine[family(key)], theirs[family(key)]
        if values and true_values:
            value = quantile(values, q)
            error = value - quantile(true_values, q)
            out.append(ErrorBound(key, value, abs(error), sampling_half_width(values, q), source, error))
    return out
