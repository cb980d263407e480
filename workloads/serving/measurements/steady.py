"""Requests in flight over time and the steady-state window of a load test (SGLang's rule).

Definitions:

- A request is in flight on [sent_s, end), half-open, where end is its `end_s` or, when the
  stream's end was not recorded, its last token's time; a request never sent, or with neither,
  is left out. Requests that failed count while they were in flight.
- The in-flight curve is a step function: breakpoints (t, n) where n holds from t to the next
  breakpoint; every start and end at one instant is applied before n is read, so a request
  that ends exactly when another starts makes no spike. The last breakpoint has n = 0.
- Steady window: the longest contiguous interval where in-flight >= 90% of the peak (compared
  exactly in integers: 10 n >= 9 peak); ties go to the earliest.
- A request lies within a window when it was sent and finished (end as above) inside it, bounds
  included.
- A window's token rate: output tokens whose arrival (`token_times_s`) falls in the window,
  bounds included, over all requests, divided by the window's length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from perfkit.workloads.serving.records import RequestRecord

STEADY_FRACTION_NUM, STEADY_FRACTION_DEN = 9, 10  # in-flight >= 9/10 of the peak


@dataclass(frozen=True)
class Window:
    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s

    def contains(self, t: float) -> bool:
        return self.start_s <= t <= self.end_s


def span(r: RequestRecord) -> tuple[float, float] | None:
    """(sent, end) of a request while in flight; None when it was never sent or has no end."""
    if r.sent_s is None:
        return None
    end = r.end_s if r.end_s is not None else (r.token_times_s[-1] if r.token_times_s else None)
    return None if end is None else (r.sent_s, max(end, r.sent_s))


def in_flight(records: Iterable[RequestRecord]) -> list[tuple[float, int]]:
    """The in-flight step function as (time, count from then on) breakpoints, in time order."""
    delta: Counter[float] = Counter()
    for r in records:
        s = span(r)
        if s is not None:
            delta[s[0]] += 1
            delta[s[1]] -= 1
    out: list[tuple[float, int]] = []
    n = 0
    for t in sorted(delta):
        n += delta[t]
        if not out or out[-1][1] != n:
            out.append((t, n))
    return out


def peak(curve: Sequence[tuple[float, int]]) -> int:
    """The highest in-flight count of a curve (0 for an empty one)."""
    return max((n for _, n in curve), default=0)


def steady_window(curve: Sequence[tuple[float, int]]) -> Window | None:
    """The longest interval with in-flight >= 90% of the peak (earliest on ties); None when
    nothing was in flight."""
    top = peak(curve)
    if top <= 0:
        return None
    best: Window | None = None
    start: float | None = None
    for t, n in curve:
        high = STEADY_FRACTION_DEN * n >= STEADY_FRACTION_NUM * top
        if high and start is None:
            start = t
        elif not high and start is not None:
            if best is None or t - start > best.length_s:
                best = Window(start, t)
            start = None
    return best  # the curve ends at 0 in flight, so every high run was closed


def requests_within(records: Iterable[RequestRecord], window: Window) -> list[RequestRecord]:
    """The requests sent and finished inside `window` (bounds included)."""
    out = []
    for r in records:
        s = span(r)
        if s is not None and window.contains(s[0]) and window.contains(s[1]):
            out.append(r)
    return out


def token_rate(records: Iterable[RequestRecord], window: Window) -> float | None:
    """Output tokens arriving inside `window` (bounds included) / its length; None when the
    window has no length."""
    if window.length_s <= 0:
        return None
    tokens = sum(1 for r in records for t in r.token_times_s if window.contains(t))
    return tokens / window.length_s
