"""A metric's noise reputation: how often its own stored runs, each taken as the candidate of
unchanged code against the rest, land far enough off to make a gate say `noisy` or `suspect`.

The store keeps no gate verdicts, so the reputation is read from the history itself: the runs
of the baseline's segment, each scored robustly against the others (its distance from their
median over 1.4826 x their median absolute deviation: outlier runs do not hide each other as
they do in a studentized residual), and the share of the runs beyond FAR_SCORE (about 1-2% for
a metric whose runs scatter like Gaussians, the share of its outlier runs when it has them).
A noisy or suspect verdict on a metric with a bad reputation is the benchmark's, not the pull
request's: the reason says so, so an engineer fixes the benchmark (more samples, warm-up, locked
clocks) rather than rerunning the pull request.

The gate scores the baseline's segment of the history it already fitted (evidence.py); the
dashboard scores the latest segment of each stored series (series_reputation, the same rule on
the same segmentation), so both tell one story.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from perfkit.regression.gate.history import segment_bounds
from perfkit.regression.gate.types import Comparison

FAR_SCORE = 3.5  # robust scores beyond this: a run far off its history
BAD_REPUTATION = 0.15  # a share of runs this far off that the reason names


MIN_RUNS = 6
MAX_LISTED = 10  # metrics of bad reputation a gate's output lists (worst first); the rest are counted


def robust_scores(x: np.ndarray) -> np.ndarray:
    """Each run's distance from the median of the others over 1.4826 x their MAD (inf when they
    are identical and it is not)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.size)
    for j in range(x.size):
        rest = np.delete(x, j)
        med = float(np.median(rest))
        mad = 1.4826 * float(np.median(np.abs(rest - med)))
        dev = abs(float(x[j]) - med)
        out[j] = dev / mad if mad > 0 else (math.inf if dev > 0 else 0.0)
    return out


def reputation(x: np.ndarray | None) -> tuple[float, int, int]:
    """(share of runs far off, runs far off, runs scored) of one metric's run locations (the
    baseline's segment; NaN, 0, 0 with fewer than MIN_RUNS)."""
    if x is None or np.asarray(x).size < MIN_RUNS:
        return math.nan, 0, 0
    z = robust_scores(np.asarray(x, dtype=np.float64))
    far = int(np.count_nonzero(z > FAR_SCORE))
    return far / z.size, far, int(z.size)


def reputation_text(far: int, runs: int) -> str:
    """'its reputation: 3 of its last 12 stored runs were as far off without a change: ...'."""
    return (f"its reputation: {far} of its last {runs} stored runs were this far off without a change: fix the "
            "benchmark (more samples, warm-up, locked clocks) rather than rerun the pull request")


def noisy_runs_text(far: int, runs: int) -> str:
    """'3/12': runs far off of runs scored ('' when none were scored)."""
    return f"{far}/{runs}" if runs > 0 else ""


def is_bad(share: float) -> bool:
    """A reputation the gate names (BAD_REPUTATION or worse; NaN: none)."""
    return math.isfinite(share) and share >= BAD_REPUTATION


def bad_reputations(rows: Iterable[Comparison]) -> list[Comparison]:
    """The rows of a metric with a bad reputation, worst first (share, then runs far off, then name)."""
    bad = [c for c in rows if is_bad(c.reputation)]
    return sorted(bad, key=lambda c: (-c.reputation, -c.reputation_far, c.metric))


@dataclass(frozen=True)
class SeriesReputation:
    """One stored series' reputation: its latest segment (the one a gate today would use) scored."""

    share: float  # runs far off / runs scored (NaN with fewer than MIN_RUNS in the segment)
    far: int
    runs: int  # runs scored: the latest segment's
    last_far: int  # index (into the whole series) of the newest run far off; -1 when none


def series_reputation(x: Sequence[float] | np.ndarray) -> SeriesReputation:
    """The reputation of one metric's stored run locations (log scale, oldest first): the latest
    segment between level shifts (history.segment_bounds, as the gate cuts its history) scored
    by `reputation`, and where its newest far-off run is."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.size < MIN_RUNS:
        return SeriesReputation(math.nan, 0, 0, -1)
    start = segment_bounds(arr)[-1]
    seg = arr[start:]
    if seg.size < MIN_RUNS:
        return SeriesReputation(math.nan, 0, 0, -1)
    z = robust_scores(seg)
    far_at = np.flatnonzero(z > FAR_SCORE)
    last = start + int(far_at[-1]) if far_at.size else -1
    return SeriesReputation(far_at.size / seg.size, int(far_at.size), int(seg.size), last)
