"""A metric's history as a series over commits: one value per commit, commits in time order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.regression.location import commit_value, run_location
from perfkit.store.read import HistoryPoint


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
