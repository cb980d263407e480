"""The pair the Compare page opens on: two runs that have something in common (a metric name,
i.e. a point key and metric, that both recorded), never the two newest runs whatever they are.

The candidate is the one asked for (?run=) or else the newest run that has a comparable older
run; its baseline is the first of, in this order: the run before it of the same spec, GPU and
branch (perfkit.dashboard.data.previous_run: what `perfkit compare BRANCH@GPU RUN` picks), then
older runs of the same spec, then any older run, then any newer one, whichever shares a metric
with it first. When no run shares a metric with any other, the page says why and what to do.
Pure: the store's metric names come in through `metrics_of` (one query per run looked at;
SEARCHED bounds how many)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

SEARCHED = 40  # runs looked at as candidates, and as baselines of each, at most


@dataclass(frozen=True)
class Pair:
    base: str | None
    cand: str | None
    why_none: str = ""  # when base is None: why no run can be its baseline, and what to do


def _same(col: pd.Series, value: object) -> pd.Series:
    return col.fillna("") == ("" if value is None or value != value else value)  # NaN spec: ""


def _baselines(all_runs: pd.DataFrame, at: int, previous: str | None) -> list[str]:
    """Run ids to try as the baseline of the run at row `at` (newest first order), best first."""
    r = all_runs.loc[at]
    older, newer = all_runs.loc[at + 1:], all_runs.loc[: at - 1].iloc[::-1]
    spec = _same(older["spec"], r["spec"])
    order = [previous] if previous else []
    order += list(older[spec & _same(older["gpu"], r["gpu"])]["run_id"]) + list(older[spec]["run_id"])
    order += list(older["run_id"]) + list(newer["run_id"])
    return list(dict.fromkeys(str(i) for i in order if i is not None))[:SEARCHED]


def _base_for(all_runs: pd.DataFrame, at: int, previous: str | None,
              metrics_of: Callable[[str], frozenset[str]]) -> str | None:
    mine = metrics_of(str(all_runs.loc[at, "run_id"]))
    if not mine:
        return None
    return next((b for b in _baselines(all_runs, at, previous) if mine & metrics_of(b)), None)


def default_pair(all_runs: pd.DataFrame, cand: str | None, metrics_of: Callable[[str], frozenset[str]],
                 previous_of: Callable[[str], str | None]) -> Pair:
    """The pair to open on (`all_runs`: perfkit.dashboard.data.runs, newest first, index 0..n-1)."""
    ids = [str(i) for i in all_runs["run_id"]]
    if cand is not None and cand in ids:
        at = ids.index(cand)
        base = _base_for(all_runs, at, previous_of(cand), metrics_of)
        if base is not None:
            return Pair(base, cand)
        spec = all_runs.loc[at, "spec"]
        named = f"spec {spec!r}" if isinstance(spec, str) and spec else "no spec name"
        return Pair(None, cand, f"no other run in the store shares a metric with run {cand} ({named}, "
                                f"{len(metrics_of(cand))} metrics): record another run of the same spec "
                                "(`perfkit profile SPEC`, `perfkit serve-bench`, `perfkit ingest`), or pick a "
                                "baseline above to see what the two runs lack")
    for at, run_id in enumerate(ids[:SEARCHED]):
        base = _base_for(all_runs, at, previous_of(run_id), metrics_of)
        if base is not None:
            return Pair(base, run_id)
    if len(ids) < 2:
        return Pair(None, ids[0] if ids else None, "the store holds one run: record another run of the same spec "
                                                   "to compare with it")
    return Pair(None, ids[0], f"none of the newest {min(len(ids), SEARCHED)} runs shares a metric with another "
                              "run (different specs, points or metric names): record a second run of a spec "
                              "(`perfkit profile SPEC` twice, across a change), or pick two runs above")
