"""Pairs of (point key, Comparison) for a report of a candidate run against a baseline.

The statistics are the gate's (`analyzers.gate_stats.compare_samples`); this only matches the
points two runs share and hands their raw timing samples over.
"""

from __future__ import annotations

from typing import Any

from perfkit.record import STATUS_OK, Run

TIME_METRIC = "time_s"


def compare_runs(base: Run, cand: Run) -> tuple[list[tuple[str, Any]], str]:
    """(key, Comparison) per point ok in both runs, and a note on what could not be compared."""
    from analyzers.gate_stats import compare_samples
    from analyzers.gate_types import LOWER

    base_points = {p.key: p for p in base.points if p.status == STATUS_OK and p.measurement}
    pairs: list[tuple[str, Any]] = []
    missing = 0
    for p in cand.points:
        b = base_points.get(p.key)
        if p.status != STATUS_OK or p.measurement is None:
            continue
        if b is None or b.measurement is None:
            missing += 1
            continue
        pairs.append((p.key, compare_samples(TIME_METRIC, b.measurement.samples_s, p.measurement.samples_s,
                                             LOWER, unit="s")))
    notes = []
    if missing:
        notes.append(f"{missing} point(s) ok in the candidate are not ok (or absent) in the baseline")
    if base.spec_hash and cand.spec_hash and base.spec_hash != cand.spec_hash:
        notes.append("the runs come from different specs: only points with equal keys are compared")
    if base.device != cand.device:
        notes.append(f"different devices ({base.device} vs {cand.device})")
    return pairs, "; ".join(notes)
