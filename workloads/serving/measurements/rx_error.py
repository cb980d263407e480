"""The client's error per number, measured against the kernel's receive stamps, for any server.

Each chunk's read carries the time the kernel received it (client/rx_stamps.py, Linux). The same
number computed with each token at its read's receive stamp and the send at the client's own
stamp is what a client that read every chunk the instant it arrived would have reported; the
client's number minus it is the error of the client's reads alone: the network's and the
server's time are on both sides and cancel. Used when every succeeded request (outside a
profiling window) has a stamp for each of its chunks; otherwise the stage falls back to the
server's stamps or the bound from the lag (measurements/client_bound.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from perfkit.workloads.serving.measurements.client_error import FROM_RX, ErrorBound
from perfkit.workloads.serving.measurements.stamp_error import errors_against
from perfkit.workloads.serving.records import RequestRecord


def received_side(records: Sequence[RequestRecord]) -> list[RequestRecord] | None:
    """The succeeded records (outside a profiling window) with every token at its read's receive
    stamp; None unless every one of them has a stamp per chunk."""
    ok = [r for r in records if r.ok and not r.in_profile_window]
    if not ok or any(len(r.chunk_rx_s) != len(r.chunk_tokens) or not r.chunk_rx_s for r in ok):
        return None
    out = []
    for r in ok:
        times = tuple(min(rx, t) for rx, t, k in zip(r.chunk_rx_s, r.chunk_times_s, r.chunk_tokens, strict=True)
                      for _ in range(k))
        if len(times) != len(r.token_times_s):
            return None
        out.append(dataclasses.replace(r, token_times_s=times))
    return out


def rx_errors(records: Sequence[RequestRecord]) -> list[ErrorBound] | None:
    """Each number in BOUNDED the stage has, with its measured error (FROM_RX); None when the
    records are not all stamped."""
    truth = received_side(records)
    return None if truth is None else errors_against(records, truth, FROM_RX)
