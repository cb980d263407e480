"""Whole gates on simulated runs: metrics as records, a baseline and a candidate run side, and
`compare_runs` with every earlier run as each metric's history (the gate's own statistics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perfkit.core.direction import LOWER
from perfkit.core.env import Env
from perfkit.regression.gate.compare import RunSide, compare_runs
from perfkit.regression.gate.robust import summarize_run
from perfkit.store.metrics import MetricRecord


def run_side(run_id: str, x: np.ndarray) -> RunSide:
    """One run of metrics m000:time_s ... (x: metrics x samples), lower is better."""
    return RunSide(run_id, run_id, "sim", Env(), tuple(
        MetricRecord(f"m{i:03d}:time_s", None, "s", LOWER, tuple(map(float, x[i]))) for i in range(x.shape[0])))


def gate(x: np.ndarray) -> Any:
    """x: runs x metrics x samples; the last run is the candidate, the one before it the baseline,
    every run but the candidate each metric's history."""
    hist = {f"m{i:03d}:time_s": [summarize_run(x[r, i], f"r{r}") for r in range(x.shape[0] - 1)]
            for i in range(x.shape[1])}
    return compare_runs(run_side(f"r{x.shape[0] - 2}", x[-2]), run_side("cand", x[-1]), lambda n: hist[n])
