"""A stage's records re-timed by the server's own stamps: the truth the client's numbers are checked
against where a server gives stamps (`perfkit serve` puts `"perfkit": {"sent_s", "tokens",
"received_s"}` on every chunk: time.monotonic() of the server's machine).

On one machine the server's monotonic clock is the client's, so a stamp minus the client's t0 is on
the stage's axis. A chunk's k tokens all take its `sent_s`; the request's send is the server's
`received_s` (when its handler saw the request). A record without stamps is left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from perfkit.workloads.serving.records import RequestRecord


def _floats(value: object) -> list[float] | None:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) for v in value):
        return None
    return [float(v) for v in value]


def as_served(records: Sequence[RequestRecord], t0_monotonic_s: float) -> list[RequestRecord]:
    """The succeeded records that carry the server's stamps, with their times replaced by them."""
    out = []
    for r in records:
        stamps, tokens, received = (_floats(r.server.get(k)) for k in ("sent_s", "tokens", "received_s"))
        if not r.ok or not stamps or not tokens or not received or len(stamps) != len(tokens):
            continue
        times = tuple(t - t0_monotonic_s for t, k in zip(stamps, tokens, strict=True) for _ in range(int(k)))
        if times:
            out.append(dataclasses.replace(r, sent_s=received[0] - t0_monotonic_s, token_times_s=times))
    return out
