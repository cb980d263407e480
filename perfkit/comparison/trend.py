"""A metric's series explained once for every view: its change points and, when the level
creeps, its trend (perfkit.regression.changepoint.trend), with the one sentence `perfkit
history` and the dashboard's History page both show."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.regression.changepoint.detect import ChangePoint
from perfkit.regression.changepoint.options import ChangePointOptions


@dataclass(frozen=True)
class TrendInfo:
    """A slow creep of the series (perfkit.regression.changepoint.trend): reported instead of a
    staircase of change points; the change points listed are those left with the line taken out."""

    first_commit: str
    last_commit: str
    slope: float  # relative change per commit
    total: float  # relative change of the line over the commits it spans
    p_value: float
    commits: int = 0  # commits the line spans

    def text(self) -> str:
        return (f"trend {self.slope * 100:+.3f}% per commit ({self.total * 100:+.2f}% from {self.first_commit[:10]} "
                f"to {self.last_commit[:10]}, p={self.p_value:.2g})")


def explain_series(values: Sequence[float], commits: Sequence[str], opts: ChangePointOptions | None = None
                   ) -> tuple[tuple[ChangePoint, ...], TrendInfo | None]:
    """The change points of a commit series (values > 0 in time order, one commit each) and its
    trend, or no trend (the change points of the series itself)."""
    from perfkit.regression.changepoint.trend import explain

    if not values or min(values) <= 0:
        return (), None
    explained = explain(list(values), opts)
    tr = explained.trend
    if tr is None:
        return explained.change_points, None
    return explained.change_points, TrendInfo(commits[tr.start], commits[tr.end], tr.slope, tr.total, tr.p_value,
                                               tr.end - tr.start + 1)
