"""A metric's history for the dashboard's History page, fast on big stores (10,000 runs): the
store's column read (perfkit.store.history_rows: two queries) and array code instead of one
Python object per run and sample.

The numbers are those of `perfkit history`: a run's value is perfkit.regression.location.run_location
(the geometric outlier-skipped mean of its samples, computed here row-wise with the gate's own
perfkit.regression.gate.robust.run_location_rows), a commit's value is the median over its runs,
commits in time order (perfkit.comparison.series.commit_series; tests check both agree). Change
points and trends come from perfkit.comparison.trend.explain_series (as in `perfkit history`) and the noise band from
perfkit.comparison.series.segment_bands (what `perfkit history --values` prints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from perfkit.comparison.series import segment_bands, series_sigma
from perfkit.comparison.trend import TrendInfo, explain_series
from perfkit.regression.changepoint.kind import change_kind
from perfkit.regression.gate.robust import run_location_rows
from perfkit.regression.location import MIN_SAMPLES
from perfkit.store.engine import Connection
from perfkit.store.history_rows import history_rows

RUN_COLUMNS = ["run_id", "gpu", "created_epoch", "commit", "branch", "value", "n"]
COMMIT_COLUMNS = ["gpu", "commit", "created_epoch", "value", "runs", "segment", "level", "band_low", "band_high"]
CHANGE_COLUMNS = ["gpu", "commit", "previous_commit", "created_epoch", "magnitude", "p_value", "before", "after",
                  "kind", "base_run", "first_run"]
# previous_commit: the last commit at the old level; base_run: its last run; first_run: the first
# run at the new level (the pair Compare shows for the change)


def history_frame(conn: Connection, name: str, gpus: Sequence[str], branch: str | None,
                  limit: int | None = None) -> pd.DataFrame:
    """One row per run of metric `name` on `gpus` (and `branch`), oldest first: RUN_COLUMNS,
    `value` being the run's location. `limit` keeps the newest runs (per call, all GPUs)."""
    rows = history_rows(conn, name, gpus, branch, limit)
    if not len(rows):
        return pd.DataFrame(columns=RUN_COLUMNS)
    location, count = run_locations(rows.metric_id, rows.stored, rows.sample_metric_id, rows.sample_value)
    run_id = pd.Series(rows.run_id, dtype=object)
    commit = pd.Series(rows.commit, dtype=object)
    return pd.DataFrame({
        "run_id": run_id, "gpu": pd.Series(rows.gpu, dtype=object), "created_epoch": rows.created_epoch,
        "commit": commit.where(commit.notna() & (commit != ""), run_id),
        "branch": pd.Series(rows.branch, dtype=object).fillna(""), "value": location, "n": count,
    })


def run_locations(metric_ids: np.ndarray, stored: np.ndarray, sample_ids: np.ndarray,
                  samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(location, sample count) per metric row: perfkit.regression.location.run_location, row-wise.

    `sample_ids` must be sorted (samples of one metric row together). Rows with fewer than 3
    samples or a non-positive sample keep their stored value (the median), as run_location does.
    """
    uniq, start, count = np.unique(sample_ids, return_index=True, return_counts=True)
    loc = np.array(stored, dtype=np.float64, copy=True)
    counts = np.zeros(len(metric_ids), dtype=np.int64)
    pos = np.searchsorted(uniq, metric_ids)
    found = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == metric_ids) if len(uniq) else \
        np.zeros(len(metric_ids), dtype=bool)
    counts[found] = count[pos[found]]
    for n in np.unique(counts[found]):
        if n < MIN_SAMPLES:
            continue
        rows = np.flatnonzero(found & (counts == n))
        block = samples[start[pos[rows]][:, None] + np.arange(n)]
        positive = np.all(block > 0, axis=1)
        if positive.any():
            loc[rows[positive]] = np.exp(run_location_rows(np.log(block[positive])).loc)
    return loc, counts


def commit_values(runs: pd.DataFrame) -> pd.DataFrame:
    """perfkit.comparison.series.commit_series of one GPU's runs: per commit the median of its runs'
    locations, its first run's time and its number of runs, in (time, commit) order."""
    g = runs.groupby("commit", sort=False)
    out = pd.DataFrame({"created_epoch": g["created_epoch"].min(), "value": g["value"].median(),
                        "runs": g.size()}).reset_index()
    return out.sort_values(["created_epoch", "commit"], kind="stable").reset_index(drop=True)


def gpu_series(gpu: str, runs: pd.DataFrame, direction: str, band_sigmas: float) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], float, TrendInfo | None]:
    """One GPU's commits (value, segment level, noise band) and change points; its sigma; and
    its trend (perfkit.comparison.trend.explain_series: the change points are then those left
    with the line taken out, as `perfkit history` lists them)."""
    series = commit_values(runs)
    values = series["value"].to_numpy(np.float64)
    cps, trend = explain_series([float(v) for v in values], [str(c) for c in series["commit"]])
    bands = segment_bands(list(values), [cp.index for cp in cps], band_sigmas,
                          slope=trend.slope if trend is not None else 0.0)
    segments = np.searchsorted([cp.index for cp in cps], np.arange(len(series)), side="right")
    records = series.to_dict("records")
    commits = [{"gpu": gpu, "commit": c["commit"], "created_epoch": c["created_epoch"], "value": c["value"],
                "runs": c["runs"], "segment": int(segment), "level": band.level, "band_low": band.low,
                "band_high": band.high}
               for c, band, segment in zip(records, bands, segments, strict=True)]
    changes = []
    if cps:
        ordered = runs.sort_values(["created_epoch", "run_id"], kind="stable").groupby("commit", sort=False)["run_id"]
        last_run, first_run = ordered.last(), ordered.first()
    for cp in cps:
        c, prev = records[cp.index], records[cp.index - 1]
        changes.append({"gpu": gpu, "commit": c["commit"], "previous_commit": prev["commit"],
                        "created_epoch": c["created_epoch"], "magnitude": cp.magnitude, "p_value": cp.p_value,
                        "before": cp.before, "after": cp.after, "kind": change_kind(cp.magnitude, direction),
                        "base_run": str(last_run[prev["commit"]]), "first_run": str(first_run[c["commit"]])})
    return commits, changes, series_sigma(list(values)), trend
