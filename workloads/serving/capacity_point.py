"""The `capacity` point of a serving workload: stages run one after another at the loads the
search asks for (measurements/capacity.py), each judged against the spec's SLO, until the
bracket closes, a stage is client-bound, or the stage budget is spent.

The point's metrics: `capacity_proven_<over>` (the highest load every SLO was proven at, with the
spec's confidence), `capacity_estimate_<over>` (the highest whose quantile estimates held),
`capacity_stages` and `capacity_stopped` (why the search ended), and one row per stage in
`capacity_probes` (load, outcome, per SLO: requests, slower than the threshold, verdict, requests
needed for a proof).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from perfkit.workloads.serving.client.stage import StageResult
from perfkit.workloads.serving.measurements.capacity import (
    Probe,
    capacity,
    next_load,
    quantile_verdict,
    stage_outcome,
)
from perfkit.workloads.serving.measurements.client_bound import stage_verdict
from perfkit.workloads.serving.measurements.latency import (
    e2e_s,
    quantile,
    tpot_s,
    ttft_s,
)
from perfkit.workloads.serving.measurements.saturation import saturation_reason
from perfkit.workloads.serving.spec import ServingSpec

RunStage = Callable[[dict[str, Any]], StageResult]
_PER_REQUEST = {"ttft_s": ttft_s, "tpot_s": tpot_s, "e2e_s": e2e_s}


LAG_SHARE = 0.1  # client lag p99 above this share of the tightest SLO threshold can flip a verdict


def _lag_error(result: StageResult, tightest_s: float) -> str | None:
    """The stage is client-bound for an SLO verdict when the client's own delays (event-loop lag,
    late sends) reach a tenth of the tightest threshold: only then can they move a request
    across it. A lag that is large next to the ITL but small next to the SLO leaves the verdict."""
    delays = [*result.lag_s, *result.lateness_s]
    if not delays:
        return None
    worst = quantile(delays, 0.99)
    if worst <= LAG_SHARE * tightest_s:
        return None
    return (f"client-bound for this SLO: client delay p99 {worst * 1e3:.1f} ms > {LAG_SHARE:.0%} of the tightest "
            f"threshold {tightest_s * 1e3:.0f} ms")


def _probe_row(spec: ServingSpec, params: dict[str, Any], result: StageResult) -> tuple[Probe, dict[str, Any]]:
    assert spec.slo is not None and spec.capacity is not None
    thresholds = {k: v for k, v in (("ttft_s", spec.slo.ttft_s), ("tpot_s", spec.slo.tpot_s),
                                    ("e2e_s", spec.slo.e2e_s)) if v is not None}
    verdicts = []
    for metric, threshold in thresholds.items():
        values = [(_PER_REQUEST[metric](r) if r.ok else None) for r in result.records]
        values = [0.0 if (v is None and r.ok and metric == "tpot_s") else v  # one token: TPOT 0 (vLLM)
                  for v, r in zip(values, result.records, strict=True)]
        verdicts.append(quantile_verdict(metric, values, threshold, spec.slo.quantile, spec.capacity.confidence))
    _, note = stage_verdict(result.records, result.lag_s, result.lateness_s, result.mean_interarrival_s,
                            result.lag_times_s, result.t0_monotonic_s, result.lag_on_thread)
    bound = _lag_error(result, min(thresholds.values()))
    rate = params.get("rate")
    saturated = saturation_reason(result.records, float(rate)) if isinstance(rate, float) and math.isfinite(rate) else None
    outcome = stage_outcome(verdicts, bound is not None, saturated is not None)
    load = float(params.get("concurrency", rate or 0.0))
    row: dict[str, Any] = {"load": load, "outcome": outcome, "requests": len(result.records),
                           "requests_ok": sum(1 for r in result.records if r.ok),
                           "slo": [{"metric": v.metric, "threshold_s": v.threshold_s, "quantile": v.quantile,
                                    "slower": v.over, "verdict": v.verdict,
                                    **({"requests_needed": v.requests_needed} if v.requests_needed else {})}
                                   for v in verdicts]}
    if bound:
        row["client_bound"] = bound
    elif note:
        row["client_note"] = f"{note} (the SLO verdicts stand: the lag is under {LAG_SHARE:.0%} of the tightest threshold)"
    if saturated:
        row["saturated"] = saturated
    return Probe(load, outcome), row


def capacity_metrics(spec: ServingSpec, run_stage: RunStage, say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Run the search; the point's metrics (see the module doc)."""
    cap = spec.capacity
    assert cap is not None
    integer = cap.over == "concurrency"
    probes: list[Probe] = []
    rows: list[dict[str, Any]] = []
    while (load := next_load(probes, cap.start, integer, cap.max_stages, cap.rel_tol)) is not None:
        params: dict[str, Any] = {"concurrency": int(load)} if integer else {"rate": float(load)}
        probe, row = _probe_row(spec, params, run_stage(params))
        probes.append(probe)
        rows.append(row)
        say(f"capacity: {cap.over} {load:g}: {probe.outcome}")
    found = capacity(probes, cap.max_stages)
    out: dict[str, Any] = {"capacity_stages": found.stages, "capacity_stopped": found.stopped,
                           "capacity_probes": rows}
    if found.proven_load is not None:
        out[f"capacity_proven_{cap.over}"] = found.proven_load
    if found.estimate_load is not None:
        out[f"capacity_estimate_{cap.over}"] = found.estimate_load
    return out
