"""Seeded synthetic timing data for the gate and change-point benchmarks.

Each noise model draws the samples of one run (seconds, lower is better) around a true level,
and says how the level moves from run to run. Parameters are those of real GPU timing noise:
a few % of spread within a run, 5-10% apart clock states, rare 1.3-3x preemption outliers,
a 1% run-to-run offset (another runner, another boost state), and a slow drift of the
level over time (1% standard deviation, about 20 runs of memory).
"""

from __future__ import annotations

import math

import numpy as np

MODELS = ("gaussian", "lognormal", "bimodal", "outliers", "drift", "offset")


def run_offsets(model: str, n_runs: int, rng: np.random.Generator) -> np.ndarray:
    """Log-scale level of each run in time order, before any real change (mean 0)."""
    if model == "offset":
        return rng.normal(0.0, 0.01, n_runs)  # 1% run-to-run offset
    if model == "drift":
        # Slow mean-reverting wander (AR(1), phi 0.95: ~20 runs memory, 1% stationary sd).
        phi, sd = 0.95, 0.01
        eps = rng.normal(0.0, sd * math.sqrt(1.0 - phi * phi), n_runs)
        out = np.empty(n_runs)
        level = rng.normal(0.0, sd)
        for i in range(n_runs):
            level = phi * level + eps[i]
            out[i] = level
        return out
    return np.zeros(n_runs)


def run_samples(model: str, n: int, log_level: float, rng: np.random.Generator) -> np.ndarray:
    """n raw samples of one run whose true (log) level is log_level, base time 1 ms."""
    base = 1e-3 * math.exp(log_level)
    if model == "gaussian":
        x = base * (1.0 + 0.02 * rng.standard_normal(n))
    elif model == "lognormal":
        x = base * np.exp(0.04 * rng.standard_normal(n))
    elif model == "bimodal":
        p_slow = rng.beta(2.0, 4.0)  # share of samples in the slow clock state, per run
        slow = rng.random(n) < p_slow
        x = base * np.where(slow, 1.08, 1.0) * (1.0 + 0.01 * rng.standard_normal(n))
    elif model == "outliers":
        x = base * (1.0 + 0.01 * rng.standard_normal(n))
        hit = rng.random(n) < 0.05
        x = np.where(hit, x * rng.uniform(1.3, 3.0, n), x)
    elif model == "drift":
        slope = rng.uniform(-0.01, 0.01)  # within-run drift, +-1% over the run
        x = base * (1.0 + slope * np.linspace(-0.5, 0.5, n)) * (1.0 + 0.01 * rng.standard_normal(n))
    elif model == "offset":
        x = base * (1.0 + 0.01 * rng.standard_normal(n))
    else:
        raise ValueError(f"unknown noise model {model!r}; one of {', '.join(MODELS)}")
    return np.asarray(np.maximum(x, 1e-9))


def commit_series(
    model: str, n_commits: int, steps: list[tuple[int, float]], rng: np.random.Generator, n: int = 10
) -> np.ndarray:
    """Per-commit medians of one run each, with relative steps [(commit index, +0.05), ...]."""
    level = run_offsets(model, n_commits, rng)
    for at, size in steps:
        level[at:] += math.log1p(size)
    return np.array([float(np.median(run_samples(model, n, lv, rng))) for lv in level])


# --- at scale: many metrics, few samples -----------------------------------------------------

SCALE_MODELS = ("gaussian", "t3", "bimodal", "offset", "drift")
WITHIN = 0.005  # sample noise of a run (relative sd)
BETWEEN = 0.003  # run-to-run offset (relative sd)


def scale_levels(model: str, n_runs: int, factor: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n_runs, metrics) log-scale level of each run and metric before any real change."""
    m = factor.size
    if model == "offset":  # larger run-to-run offsets: another runner, another boost state
        return rng.normal(0.0, 1.0, (n_runs, m)) * (0.01 * factor)
    if model == "drift":  # slow mean-reverting wander (AR(1), phi 0.9) of 0.6% sd, plus offsets
        phi, sd = 0.9, 0.006
        level = rng.normal(0.0, sd, m)
        out = np.empty((n_runs, m))
        for i in range(n_runs):
            level = phi * level + rng.normal(0.0, sd * math.sqrt(1.0 - phi * phi), m)
            out[i] = level
        return (out + rng.normal(0.0, BETWEEN, (n_runs, m))) * factor
    return rng.normal(0.0, 1.0, (n_runs, m)) * (BETWEEN * factor)


def scale_samples(model: str, n: int, levels: np.ndarray, factor: np.ndarray,
                  rng: np.random.Generator) -> np.ndarray:
    """(runs, metrics, n) raw samples (seconds, base 1 ms) around the runs' log levels.

    Noise per metric scales with `factor` (metrics of one sweep differ in relative noise):
    gaussian, t3 (Student t with 3 df: heavy tails, same sd), bimodal (two clock states 3%
    apart, a share of slow samples that differs per run: Beta(2, 4)), offset and drift
    (gaussian samples, the levels move: scale_levels).
    """
    runs, m = levels.shape
    sd = (WITHIN * factor)[None, :, None]
    if model == "t3":
        noise = rng.standard_t(3, (runs, m, n)) / math.sqrt(3.0) * sd
    else:
        noise = rng.standard_normal((runs, m, n)) * sd
    x = np.exp(levels)[:, :, None] * (1.0 + noise)
    if model == "bimodal":
        p_slow = rng.beta(2.0, 4.0, (runs, m, 1))
        x = x * np.where(rng.random((runs, m, n)) < p_slow, 1.0 + 0.03 * factor[None, :, None], 1.0)
    elif model not in SCALE_MODELS:
        raise ValueError(f"unknown noise model {model!r}; one of {', '.join(SCALE_MODELS)}")
    return np.asarray(1e-3 * np.maximum(x, 1e-6))
