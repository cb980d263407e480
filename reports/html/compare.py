"""The gate's comparison of two runs (perfkit.regression.gate.compare.GateResult) as the (point key,
Comparison) pairs and the one-line note the run reports show. No statistics here."""

from __future__ import annotations

from typing import Any


def gate_pairs(result: Any) -> tuple[list[tuple[str, Any]], str]:
    """(point key, Comparison) per measurement the gate counts (its rows: a point's time, flop/s and
    bytes/s are one), and what could not be compared."""
    key_of = {m.name: m.point_key for m in (*result.base.metrics, *result.cand.metrics)}
    pairs = [(key_of.get(c.metric) or c.metric, c) for c in result.rows]
    notes = list(result.run_reasons)
    if result.only_cand:
        notes.append(f"{len(result.only_cand)} metric(s) only in the candidate")
    if result.only_base:
        notes.append(f"{len(result.only_base)} metric(s) only in the baseline")
    return pairs, "; ".join(notes)


def metric_suffix(metric: str, key: str) -> str:
    """`gemm/sq/m=32:time_s` -> `time_s` when the metric belongs to point `key`."""
    prefix = f"{key}:"
    return metric[len(prefix):] if metric.startswith(prefix) else metric
