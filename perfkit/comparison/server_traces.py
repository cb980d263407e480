"""The join: a comparison's serving stages gain their kernel level from the server traces both
runs kept (`artifacts.server_traces` of each point, run-relative, under server_traces/<point>/).

For every stage with a why and traces on both sides: load each side's traces, split them into
engine steps, take per-step samples (analyzers/steps/) and compare them (step_compare.py); the
client check sets the step period beside the stage's TPOT p50. A trace that cannot be read
leaves that stage's kernel level out with its reason, never the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.analyzers.steps.engine import engine_steps
from perfkit.analyzers.steps.graph_capture import split_captures
from perfkit.analyzers.steps.samples import step_samples
from perfkit.comparison.step_compare import compare_steps
from perfkit.core.errors import PerfkitError
from perfkit.regression.gate.compare import GateResult
from perfkit.regression.kernel_why import ClientCheck, KernelWhy
from perfkit.regression.serving_why import ServingWhy


def server_traces_of(points: Sequence[Any], run_dir: str | Path | None) -> dict[str, tuple[str, ...]]:
    """point key -> absolute paths of its server traces (points without any are left out)."""
    if run_dir is None:
        return {}
    out = {}
    for p in points:
        rel = getattr(getattr(p, "artifacts", None), "server_traces", None) or []
        if rel:
            out[str(p.key)] = tuple(str(Path(run_dir) / r) for r in rel)
    return out


def window_tpot_of(points: Sequence[Any]) -> dict[str, float]:
    """point key -> TPOT p50 of the requests inside its profiled window: the requests whose steps
    the trace holds (the profiler slows them, so the whole stage's TPOT is not their measure)."""
    out = {}
    for p in points:
        window = getattr(getattr(p, "artifacts", None), "profile_window", None)
        tpot = getattr(getattr(window, "overhead", None), "tpot_p50_inside_s", None)
        if isinstance(tpot, (int, float)) and math.isfinite(tpot) and tpot > 0:
            out[str(p.key)] = float(tpot)
    return out


def stage_samples(paths: Sequence[str]) -> tuple[pd.DataFrame, str, float]:
    """(per-step samples, how steps were found, mean step period in s) of one stage's traces.
    A trace of graph capture alone (vLLM's / SGLang's capture traces) holds no steps: it gives
    the graph-replayed kernels of the others their ops (analyzers/steps/graph_replay.py)."""
    replays, captures = split_captures(paths)
    table = load_trace_files(replays)
    steps = engine_steps(table)
    f = steps.frame
    period = float((f["end_ns"].max() - f["ts_ns"].min()) / len(f) / 1e9) if len(f) else math.nan
    return step_samples(table, steps, captures), steps.method, period


def _client(m: Mapping[str, Any], period: float, window_tpot_s: float | None = None) -> ClientCheck | None:
    """The step period beside the TPOT of the requests the trace saw (inside the window), else
    the stage's TPOT p50."""
    tpot = window_tpot_s if window_tpot_s is not None else m.get("tpot_p50_s")
    if isinstance(tpot, (int, float)) and math.isfinite(period) and tpot > 0:
        return ClientCheck(period, float(tpot), inside_window=window_tpot_s is not None)
    return None


def kernel_why(key: str, base_paths: Sequence[str], cand_paths: Sequence[str],
               base_metrics: Mapping[str, Any] | None = None, cand_metrics: Mapping[str, Any] | None = None,
               window_tpot_s: tuple[float | None, float | None] = (None, None)) -> KernelWhy:
    """The kernel level of one stage from both sides' trace files."""
    sb, mb, pb = stage_samples(base_paths)
    sc, mc, pc = stage_samples(cand_paths)
    k = compare_steps(key, sb, sc, mb, mc)
    checks = [(side, c) for side, c in (("baseline", _client(base_metrics or {}, pb, window_tpot_s[0])),
                                        ("candidate", _client(cand_metrics or {}, pc, window_tpot_s[1])))
              if c is not None]
    return replace(k, traces_base=tuple(base_paths), traces_cand=tuple(cand_paths), client=tuple(checks))


def _failed(key: str, reason: str) -> KernelWhy:
    return KernelWhy(key, False, "", "", "", 0.0, 0.0, (), failure=f"kernel level: {reason}")


def with_kernels(result: GateResult) -> GateResult:
    """`result` with the kernel level on every serving stage both sides have server traces for."""
    bt, ct = result.base.server_traces, result.cand.server_traces
    if not bt or not ct or not result.why:
        return result
    out: list[ServingWhy] = []
    for w in result.why:
        if w.point_key in bt and w.point_key in ct:
            try:
                k = kernel_why(w.point_key, bt[w.point_key], ct[w.point_key],
                               result.base.point_metrics.get(w.point_key), result.cand.point_metrics.get(w.point_key),
                               (result.base.window_tpot_s.get(w.point_key), result.cand.window_tpot_s.get(w.point_key)))
            except (PerfkitError, OSError, ValueError) as e:
                k = _failed(w.point_key, str(e).splitlines()[0] if str(e) else type(e).__name__)
            w = replace(w, kernels=k)
        out.append(w)
    return replace(result, why=tuple(out))
