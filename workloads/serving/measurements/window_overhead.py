"""The profiling window's place among a stage's requests, and its cost on them.

Definitions (times on the stage clock):
- A request is inside the window when its in-flight span [sent, end] (steady.span) overlaps the
  window [start_s, end_s], bounds included: it ran, at least in part, with the profiler on.
- TPOT p50 inside / outside: the median TPOT (latency.tpot_s) of the succeeded requests inside /
  not inside.
- ITL p50 inside / outside: per-token gaps (a chunk of k tokens after a gap g gives k gaps g/k)
  whose chunk and the chunk before it both arrived inside the window / both outside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from dataclasses import replace

from perfkit.core.profile_window import WindowOverhead
from perfkit.workloads.serving.measurements.latency import tpot_s
from perfkit.workloads.serving.measurements.steady import span
from perfkit.workloads.serving.records import RequestRecord


def overlaps(r: RequestRecord, start_s: float, end_s: float) -> bool:
    s = span(r)
    return s is not None and s[0] <= end_s and s[1] >= start_s


def mark_window(records: Sequence[RequestRecord], start_s: float, end_s: float) -> list[RequestRecord]:
    """The records with `in_profile_window` set on those inside the window."""
    return [replace(r, in_profile_window=True) if overlaps(r, start_s, end_s) else r for r in records]


def _gaps(r: RequestRecord) -> Iterator[tuple[float, float, float]]:
    """(previous chunk's time, this chunk's time, per-token gap) of each chunk after the first."""
    times, tokens = r.chunk_times_s, r.chunk_tokens
    for i in range(1, len(times)):
        k = max(tokens[i], 1)
        for _ in range(k):
            yield times[i - 1], times[i], (times[i] - times[i - 1]) / k


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def window_overhead(records: Sequence[RequestRecord], start_s: float, end_s: float) -> WindowOverhead:
    ok = [r for r in records if r.ok]
    inside = [r for r in ok if overlaps(r, start_s, end_s)]
    outside = [r for r in ok if not overlaps(r, start_s, end_s)]

    def within(t: float) -> bool:
        return start_s <= t <= end_s

    itl_in: list[float] = []
    itl_out: list[float] = []
    for r in ok:
        for a, b, gap in _gaps(r):
            if within(a) and within(b):
                itl_in.append(gap)
            elif not within(a) and not within(b) and not (a < start_s and b > end_s):
                itl_out.append(gap)
    tpot_in = [v for v in map(tpot_s, inside) if v is not None]
    tpot_out = [v for v in map(tpot_s, outside) if v is not None]
    return WindowOverhead(tpot_p50_inside_s=_median(tpot_in), tpot_p50_outside_s=_median(tpot_out),
                          itl_p50_inside_s=_median(itl_in), itl_p50_outside_s=_median(itl_out),
                          requests_inside=len(inside), requests_outside=len(outside))
