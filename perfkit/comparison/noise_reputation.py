"""Noise reputation of stored metrics (the dashboard's table): per metric and GPU, the share of
its stored runs at the current level that landed far off the others without a code change.

The same rule and the same numbers as the gate's `noisy runs` (perfkit.regression.gate.reputation):
the newest HISTORY_RUNS runs of the metric on the GPU (of the branch when given), each run's
location as `perfkit history` and the gate compute it (perfkit.comparison.history_frame), the
latest segment between level shifts scored robustly (series_reputation). One row per
measurement, as the gate's: a point's flop/s and bytes/s are its time's samples in other units
(perfkit.regression.gate.groups), so they are left out beside its time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfkit.comparison.gate_history import HISTORY_RUNS
from perfkit.comparison.history_frame import history_frame
from perfkit.regression.gate.groups import DERIVED, PRIMARY
from perfkit.regression.gate.reputation import series_reputation
from perfkit.store.engine import Connection


@dataclass(frozen=True)
class MetricReputation:
    name: str  # the stored metric name
    gpu: str
    share: float  # runs far off / runs scored
    far: int  # runs far off
    runs: int  # runs scored (the latest segment of the newest HISTORY_RUNS)
    last_far_commit: str  # commit of the newest run far off ("" when none)
    last_far_run: str  # its run id ("" when none)


def metric_reputations(conn: Connection, names: Sequence[str], gpus: Sequence[str], branch: str | None,
                       limit: int = HISTORY_RUNS) -> list[MetricReputation]:
    """The reputation of every measurement in `names` (one_per_measurement) on each GPU of `gpus`
    with enough stored runs (reputation.MIN_RUNS at its current level), worst first: share, then
    runs far off, then name."""
    out = []
    for name in one_per_measurement(names):
        for gpu in gpus:
            runs = history_frame(conn, name, [gpu], branch, limit)
            values = runs["value"].to_numpy(dtype=np.float64) if len(runs) else np.empty(0)
            ok = np.isfinite(values) & (values > 0)
            if not ok.all():
                runs, values = runs[ok], values[ok]
            rep = series_reputation(np.log(values))
            if rep.runs == 0 or math.isnan(rep.share):
                continue
            last = runs.iloc[rep.last_far] if rep.last_far >= 0 else None
            out.append(MetricReputation(name, gpu, rep.share, rep.far, rep.runs,
                                        str(last["commit"]) if last is not None else "",
                                        str(last["run_id"]) if last is not None else ""))
    return sorted(out, key=lambda r: (-r.share, -r.far, r.name, r.gpu))


def one_per_measurement(names: Sequence[str]) -> list[str]:
    """`names` without `<point>:flop_per_s` / `<point>:bytes_per_s` when `<point>:time_s` is there."""
    present = set(names)
    out = []
    for name in names:
        key, _, metric = name.rpartition(":")
        if not (key and metric in DERIVED and f"{key}:{PRIMARY}" in present):
            out.append(name)
    return out
