"""A metric's history as a series over commits: one value per commit, commits in time order;
and each commit's noise band (what `perfkit history --values` prints and the dashboard draws)."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.core.measurement import median
from perfkit.regression.gate.history import run_spread
from perfkit.regression.gate.types import RunSummary
from perfkit.regression.location import commit_value, run_location
from perfkit.store.read import HistoryPoint

LOG_FLOAT_MAX = math.log(sys.float_info.max)  # 709.78
BAND_SIGMAS = 2.0  # the noise band: the segment's level times exp(+-2 run-to-run sigma)


@dataclass(frozen=True)
class CommitValue:
    commit: str  # the commit, or the run id for runs without one
    created_epoch: float  # its first run
    created: str
    value: float  # median over its runs of each run's location (perfkit.regression.location)
    runs: int


def commit_series(history: Sequence[HistoryPoint]) -> list[CommitValue]:
    groups: dict[str, list[HistoryPoint]] = {}
    for h in history:
        groups.setdefault(h.commit or h.run_id, []).append(h)
    out = []
    for commit, hs in groups.items():
        first = min(hs, key=lambda h: h.created_epoch)
        locs = [run_location(h.samples, h.value) for h in hs]
        out.append(CommitValue(commit, first.created_epoch, first.created, commit_value(locs), len(hs)))
    out.sort(key=lambda c: (c.created_epoch, c.commit))
    return out


@dataclass(frozen=True)
class Band:
    level: float  # the median of the commit values of its segment (between change points)
    low: float  # level / exp(sigmas * sigma); NaN when the series is too short for a sigma
    high: float


def series_sigma(values: Sequence[float]) -> float:
    """Run-to-run sigma (log scale) of a series of commit values: the gate's run_spread."""
    return run_spread([RunSummary(math.log(v), math.nan, 1) for v in values if v > 0])[0]


def segment_bands(values: Sequence[float], change_indices: Sequence[int], sigmas: float = BAND_SIGMAS,
                  slope: float = 0.0) -> list[Band]:
    """Per commit value: its segment's level and noise band (level times exp(+-sigmas * sigma),
    sigma the series' run-to-run spread, perfkit.regression.gate.history.run_spread).

    With a trend (`slope`: relative change per commit, perfkit.comparison.trend.TrendInfo) the
    level follows the line: each segment's median of the values with the line taken out, plus the
    line at each commit (the change points are those of the detrended series); a flat median of a
    creeping segment would start the level line mid-ramp."""
    sigma = series_sigma(values)
    # a spread past 709 log units (values 1e-308 and 1e308 in one series): a band of everything
    width = math.exp(min(sigmas * sigma, LOG_FLOAT_MAX)) if math.isfinite(sigma) else math.nan
    bounds = [0, *change_indices, len(values)]
    ramped = slope != 0.0 and math.isfinite(slope) and slope > -1.0 and all(v > 0 for v in values)
    step = math.log1p(slope) if ramped else 0.0
    out: list[Band] = []
    for a, b in itertools.pairwise(bounds):
        if ramped:
            base = median([math.log(values[i]) - step * i for i in range(a, b)])
            for i in range(a, b):
                level = math.exp(base + step * i)
                out.append(Band(level, level / width, level * width))
            continue
        level = median(values[a:b])
        out += [Band(level, level / width, level * width)] * (b - a)
    return out
