"""One IngestedStage -> the params and metrics of a perfkit serving point.

Params name the load as `ServingSpec.stages()` does: `concurrency=N` for a closed loop (and for
"as fast as allowed" with a cap: vLLM's rate inf with --max-concurrency, GuideLLM's synchronous,
concurrent and throughput), `rate=R` with `burstiness` (when not 1; inf: vLLM's constant
arrivals) and `max_concurrency` for an open loop, `rate=inf` for every request at once, and
`stage=<index>` for a load perfkit has no name for (vLLM's ramp-up, a file that does not say).

Metrics: with per-request records, `summarize(records, duration)` (perfkit's definitions;
`request_samples` per request for the gate); when the file keeps only a sample of the requests
(GuideLLM's sample_size), the counts and rates that need every request are the tool's own. With
no per-request records, the tool's aggregates under perfkit's keys (`TOOL_KEYS`). Always:
`source`, `tool_summary` (every aggregate the tool wrote, perfkit's names, seconds),
`definitions` (how the tool defines those that differ from perfkit: under the tool_summary
name, and under the metric's name where the metric is the tool's number or the tool measured
each request's value: TTFT, chunk gaps, E2E),
`serving_notes`, `tool_info`, and `endpoint` where the file names it.
"""

from __future__ import annotations

import math
from typing import Any

from perfkit.ingest.serving.stage import IngestedStage
from perfkit.workloads.serving.measurements.cost import Price, usd_per_1m_tokens
from perfkit.workloads.serving.measurements.summary import summarize

# the tool's summary key (stage.py's names) -> perfkit's metric key (summary.py's names)
TOOL_KEYS = {
    **{f"ttft_{s}_s": f"ttft_{s}_s" for s in ("p50", "p90", "p99", "mean")},
    **{f"tpot_{s}_s": f"tpot_{s}_s" for s in ("p50", "p90", "p99", "mean")},
    "token_itl_p50_s": "chunk_gap_p50_s",  # vLLM's itl, AIPerf's inter_chunk_latency: chunk gaps
    "token_itl_p99_s": "chunk_gap_p99_s",
    "e2e_p50_s": "e2e_p50_s", "e2e_p99_s": "e2e_p99_s",
    "e2e_from_schedule_p50_s": "e2e_sched_p50_s", "e2e_from_schedule_p99_s": "e2e_sched_p99_s",
    "request_per_s": "request_per_s", "output_tok_per_s": "output_tok_per_s",
    "total_tok_per_s": "total_tok_per_s", "goodput_request_per_s": "goodput_req_per_s",
    "completed": "requests_ok", "duration_s": "duration_s", "peak_concurrency": "in_flight_peak",
}
# what a sample of the requests cannot give: counts and rates over the whole stage
WHOLE_STAGE = ("requests_ok", "requests_failed", "request_per_s", "output_tok_per_s",
               "input_tok_per_s", "total_tok_per_s", "steady_output_tok_per_s", "in_flight_peak")
MEASURED_PER_REQUEST = ("ttft_", "chunk_gap_", "e2e_")
USD_KEYS = {"usd_per_1m_output_tok": "output_tok_per_s", "usd_per_1m_input_tok": "input_tok_per_s",
            "usd_per_1m_total_tok": "total_tok_per_s"}


def stage_params(stage: IngestedStage) -> dict[str, Any]:
    """The point's params: the load as ServingSpec.stages() names it (see the module doc)."""
    rate, cap, strategy = stage.request_rate_per_s, stage.concurrency, stage.strategy or ""
    if rate is not None:
        params: dict[str, Any] = {"rate": rate}
        if strategy == "constant" and stage.source == "vllm":
            params["burstiness"] = math.inf
        elif stage.burstiness is not None and stage.burstiness != 1.0:
            params["burstiness"] = stage.burstiness
        if cap is not None:
            params["max_concurrency"] = cap
        return params
    if strategy.startswith("ramp-up"):
        return {"stage": stage.index}
    if cap is not None:
        return {"concurrency": cap}
    if strategy in ("unlimited", "throughput"):
        return {"rate": math.inf}
    return {"stage": stage.index}


def tool_metrics(summary: dict[str, float]) -> dict[str, Any]:
    """The tool's aggregates under perfkit's keys, with the ones perfkit derives from them."""
    out: dict[str, Any] = {TOOL_KEYS[k]: v for k, v in summary.items() if k in TOOL_KEYS}
    failed = [summary[k] for k in ("failed", "incomplete") if k in summary]
    if failed:
        out["requests_failed"] = float(sum(failed))
    duration = summary.get("duration_s")
    if "input_tokens" in summary and duration:
        out["input_tok_per_s"] = summary["input_tokens"] / duration
    tpot = out.get("tpot_p50_s")
    if isinstance(tpot, float) and tpot > 0:
        out["interactivity_tok_per_s"] = 1.0 / tpot
    return out


def _duration_s(stage: IngestedStage) -> float:
    """The stage's duration: the tool's, else from its first arrival to the last response."""
    given = stage.duration_s if stage.duration_s is not None else stage.summary.get("duration_s")
    if given is not None:
        return given
    ends = [t for r in stage.requests for t in (r.end_s, *r.token_times_s[-1:]) if t is not None]
    return max(ends, default=0.0)


def _sampled(stage: IngestedStage) -> int | None:
    """The tool's request count when the file keeps fewer requests than it counted, else None."""
    counts = [stage.summary[k] for k in ("completed", "failed", "incomplete") if k in stage.summary]
    total = int(max(sum(counts), stage.summary.get("requests_total", 0.0)))
    return total if total > len(stage.requests) else None


def _set_usd(metrics: dict[str, Any], price: Price | None) -> None:
    """USD per 1M tokens from the rates in `metrics` (summary.py's definition)."""
    for usd_key, rate_key in USD_KEYS.items():
        metrics.pop(usd_key, None)
        rate = metrics.get(rate_key)
        usd = usd_per_1m_tokens(price, rate) if price is not None and isinstance(rate, float) else None
        if usd is not None:
            metrics[usd_key] = usd


def _from_requests(stage: IngestedStage, price: Price | None) -> tuple[dict[str, Any], set[str], list[str]]:
    """summarize()'s metrics, the keys whose numbers are the tool's own, and notes."""
    metrics: dict[str, Any] = dict(summarize(stage.requests, _duration_s(stage), None, price))
    # each request's times are the tool's measurements (its TTFT, its chunk gaps, its E2E)
    own = {k for k in metrics if k.startswith(MEASURED_PER_REQUEST)}
    total = _sampled(stage)
    if total is None:
        return metrics, own, []
    whole = tool_metrics(stage.summary)
    for key in WHOLE_STAGE:
        metrics.pop(key, None)
        if key in whole:
            metrics[key] = whole[key]
            own.add(key)
    _set_usd(metrics, price)
    return metrics, own, [f"counts and rates are {stage.source}'s own (all {total} requests); latencies "
                          f"and request_samples are from the {len(stage.requests)} the file keeps"]


def stage_metrics(stage: IngestedStage, price: Price | None = None) -> dict[str, Any]:
    """The point's metrics (see the module doc)."""
    if stage.requests:
        metrics, own, notes = _from_requests(stage, price)
    else:
        metrics, notes = tool_metrics(stage.summary), []
        own = set(metrics)
        _set_usd(metrics, price)
    renamed = {TOOL_KEYS[k]: d for k, d in stage.definitions.items() if TOOL_KEYS.get(k) in own}
    metrics |= {"source": stage.source, "tool_summary": dict(stage.summary),
                "definitions": {**stage.definitions, **renamed},
                "serving_notes": [*stage.notes, *notes], "tool_info": dict(stage.info)}
    if "endpoint" in stage.info:
        metrics["endpoint"] = stage.info["endpoint"]
    return {k: v for k, v in metrics.items() if not (isinstance(v, float) and not math.isfinite(v))}


def failed_reason(stage: IngestedStage, metrics: dict[str, Any]) -> str | None:
    """Why the stage has nothing to compare (every request failed, or no numbers at all), else None."""
    ok = metrics.get("requests_ok")
    if stage.requests and not any(r.ok for r in stage.requests) and not ok:
        reasons = metrics.get("failures") or {}
        why = "; ".join(f"{k} x{v}" for k, v in reasons.items()) if isinstance(reasons, dict) else ""
        return f"all {len(stage.requests)} requests in the file failed" + (f" ({why})" if why else "")
    if not stage.requests and ok == 0.0:
        return f"{stage.source} counted no completed request"
    if not any(isinstance(metrics.get(k), float) for k in TOOL_KEYS.values()):
        return f"no per-request data and no aggregate perfkit reads in the {stage.source} file"
    return None
