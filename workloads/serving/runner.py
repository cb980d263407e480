"""`kind: serving`: each stage (point) is one load test against the spec's endpoint.

The stage runs while the point is built (there is no callable to time: the load client measures
every request); its numbers come back as the point's metrics (perfkit.workloads.serving.measurements.summary),
with the client-bound verdict, the server's /metrics differences and the per-request file. A
`front` point (with `target_interactivity`) puts the cost at each target interactivity along the
throughput-vs-interactivity front of the stages measured before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from dataclasses import replace
from typing import Any

from perfkit.core.cost import Cost
from perfkit.core.errors import PerfkitError
from perfkit.core.run_layout import serving_requests_name
from perfkit.core.terminal import terminal_safe
from perfkit.workloads.base import Point, Prepared, RunContext
from perfkit.workloads.serving.client.bounds import dropped_notes
from perfkit.workloads.serving.client.lora_check import lora_format
from perfkit.workloads.serving.client.plan import (
    DURATION_PROMPTS,
    auth_headers,
    price_of,
    slo_of,
    stage_plan,
    window_plan,
)
from perfkit.workloads.serving.client.processes import run_stage_processes
from perfkit.workloads.serving.client.request_file import write_requests
from perfkit.workloads.serving.client.send import ClientOptions
from perfkit.workloads.serving.client.stage import StageResult, run_stage
from perfkit.workloads.serving.client.url import redact_urls
from perfkit.workloads.serving.measurements.client_bound import bounds_note, p99, stage_verdict
from perfkit.workloads.serving.measurements.energy import energy_metrics
from perfkit.workloads.serving.measurements.saturation import saturation_reason
from perfkit.workloads.serving.measurements.summary import stage_numbers
from perfkit.workloads.serving.measurements.validity import stage_validity
from perfkit.workloads.serving.replay_reuse import replay_reuse
from perfkit.workloads.serving.spec import ServingSpec
from perfkit.workloads.serving.telemetry.dcgm import StageEnergy
from perfkit.workloads.serving.telemetry.dcgm_sampler import DcgmStage, dcgm_energy
from perfkit.workloads.serving.telemetry.gpu_telemetry import gpu_telemetry, stage_energy
from perfkit.workloads.serving.telemetry.plausible import keep_plausible
from perfkit.workloads.serving.telemetry.server_metrics import server_metrics
from perfkit.workloads.serving.telemetry.stage_series import stage_series
from perfkit.workloads.serving.window_record import window_record

MEASURED_BY_CLIENT = "serving stage: measured request by request by the load client"


def client_options(spec: ServingSpec) -> ClientOptions:
    assert spec.endpoint is not None
    c = spec.client
    return ClientOptions(base_url=spec.endpoint, model=spec.model, api=spec.api,
                         connect_timeout_s=c.connect_timeout_s, read_timeout_s=c.read_timeout_s,
                         request_timeout_s=c.request_timeout_s, ignore_eos=c.ignore_eos, usage=c.usage,
                         logprobs=c.logprobs, follow_redirects=c.follow_redirects, headers=auth_headers(spec),
                         tokenizer=c.tokenizer, lora_format=_lora_format(spec))


def _lora_format(spec: ServingSpec) -> str:
    """How requests name their LoRA adapter: the one asked, or (auto) what the server says (lora_check)."""
    if spec.lora is None or spec.lora.format != "auto":
        return spec.lora.format if spec.lora is not None else "vllm"
    assert spec.endpoint is not None
    return lora_format(spec.endpoint, spec.lora.adapters, spec.lora.format, auth_headers(spec))


def _nothing() -> None:
    return None


def prepare(point: Point, ctx: RunContext) -> Prepared:
    spec = point.spec
    assert isinstance(spec, ServingSpec)
    if "front" in point.params:
        from perfkit.workloads.serving.measurements.front_point import front_metrics

        return Prepared(fn=_nothing, cost=Cost(0.0, 0.0), skip_timing=MEASURED_BY_CLIENT,
                        measured=front_metrics(spec, ctx.earlier))
    if spec.endpoint is None:
        if spec.server is not None:
            raise PerfkitError(f"{point.key}: a serving workload with a server block runs under "
                               "`perfkit serve-sweep SPEC`, which starts the server")
        raise PerfkitError(f"{point.key}: no endpoint; give the server's URL (endpoint: http://HOST:PORT)")
    if "capacity" in point.params:
        from perfkit.workloads.serving.capacity_point import capacity_metrics

        measured = capacity_metrics(spec, lambda params: _run(spec, params, ctx.seed))
        if spec.server is not None and spec.server.launched:
            measured["server_launch"] = dict(spec.server.launched)
        return Prepared(fn=_nothing, cost=Cost(0.0, 0.0), skip_timing=MEASURED_BY_CLIENT, measured=measured)
    with gpu_telemetry(spec.endpoint) as gpus, _dcgm(spec) as dcgm:
        result = _run(spec, point.params, ctx.seed)
    artifacts = None
    plan = window_plan(spec)
    if plan is not None and result.window is not None:
        records, artifacts = window_record(plan, result.window, result.records, point.key, ctx.out_dir)
        result = replace(result, records=records)
    measured = stage_metrics(spec, point.key, result, ctx, point.params)
    server = {**measured.get("server_metrics", {}), **gpus.metrics()}
    server.pop("server_gpu_energy_j", None)  # stage_energy's, from its one source
    energy = stage_energy(gpus, dcgm.result if dcgm is not None else None)
    if energy is not None or (spec.price is not None and spec.price.usd_per_kwh is not None):
        energy = energy or StageEnergy(None, "none", "no energy source: give --gpu-metrics URL (a DCGM exporter) "
                                                    "or run the server on this host (NVML)")
        energy_server, top = energy_metrics(energy.energy_j, energy.source, terminal_safe(redact_urls(energy.reason)),
                                            *_tokens(measured), spec.price.usd_per_kwh if spec.price else None)
        if energy_server and energy.window_s is not None:
            energy_server["server_gpu_energy_window_s"] = energy.window_s  # scrape to scrape (warm-up included)
        server.update(energy_server)
        measured.update(top)
        if "energy_not_measured" in top:
            measured["serving_notes"] = [*(measured.get("serving_notes") or ()),
                                         f"GPU energy not measured ({energy.source}): {top['energy_not_measured']}"]
    if server:
        measured["server_metrics"] = server
    if spec.server is not None and spec.server.launched:  # the start that served this stage (serve-sweep)
        measured["server_launch"] = dict(spec.server.launched)
    return Prepared(fn=_nothing, cost=Cost(0.0, 0.0), skip_timing=MEASURED_BY_CLIENT, measured=measured,
                    artifacts=artifacts)


def _dcgm(spec: ServingSpec) -> contextlib.AbstractContextManager[DcgmStage | None]:
    g = spec.gpu_metrics
    return dcgm_energy(g.url, g.gpus) if g is not None else contextlib.nullcontext()


def _tokens(measured: dict[str, Any]) -> tuple[float, float]:
    """(output, total) tokens of the stage, from its rates and duration."""
    duration = float(measured.get("duration_s") or 0.0)
    out = float(measured.get("output_tok_per_s") or 0.0) * duration
    return out, out + float(measured.get("input_tok_per_s") or 0.0) * duration


def _run(spec: ServingSpec, params: dict[str, Any], seed: int) -> StageResult:
    opts, plan = client_options(spec), stage_plan(spec, params, seed)
    if spec.client.processes == 1:
        return asyncio.run(run_stage(opts, plan))
    total = plan.requests if plan.requests is not None else len(plan.arrivals_s or ()) or DURATION_PROMPTS
    return run_stage_processes(opts, plan, spec.client.processes, total)


def stage_metrics(spec: ServingSpec, key: str, result: StageResult, ctx: RunContext,
                  params: dict[str, Any] | None = None) -> dict[str, Any]:
    params = params or {}
    ok = [r for r in result.records if r.ok]
    if not ok:
        reasons = sorted({r.error or "no output" for r in result.records})
        raise PerfkitError(f"{key}: all {len(result.records)} requests to {redact_urls(spec.endpoint or '')} "
                           f"failed ({'; '.join(reasons)[:300]}); check that the server is up and serves "
                           f"model '{terminal_safe(spec.model)}'")
    numbers = stage_numbers(result.records, result.duration_s, slo_of(spec), price_of(spec))
    rate = params.get("rate")
    saturated = (saturation_reason(result.records, float(rate))
                 if isinstance(rate, (int, float)) and math.isfinite(rate) else None)
    asked, reuse_notes = replay_reuse(spec, params, result.records, numbers.prompt_cache_share)
    notes = [*result.notes, *dropped_notes(r.dropped for r in result.records), *reuse_notes]
    name = None
    if ctx.out_dir is not None:
        name = serving_requests_name(key)
        write_requests(ctx.out_dir / name, result.records)
    series_stats, series = stage_series(result.metrics_samples)
    server, out_of_range = keep_plausible({**server_metrics(result.metrics_before, result.metrics_after),
                                           **series_stats})
    notes += out_of_range
    if series:  # the server's queue and KV cache while the stage ran (telemetry/stage_series.py)
        numbers = dataclasses.replace(numbers, extra={**numbers.extra, "server_series": series})
    errors, bound = stage_verdict(result.records, result.lag_s, result.lateness_s, result.mean_interarrival_s,
                                  result.lag_times_s, result.t0_monotonic_s, result.lag_on_thread)
    notes += [n for n in (bounds_note(errors),) if n]
    valid = stage_validity(result.records, result.planned, bound, saturated)
    numbers = dataclasses.replace(
        numbers, client_lag_p99_s=p99(result.lag_s), send_late_p99_s=p99(result.lateness_s),
        client_error_bounds={b.metric: b.bound_s for b in errors} or None,
        client_error_source=errors[0].source if errors else None,
        client_bound=bound, saturated=saturated or None, validity=valid.verdict,
        validity_reasons=tuple(terminal_safe(redact_urls(r)) for r in valid.reasons),
        validity_unchecked=valid.unchecked or None,
        requests_planned=float(result.planned) if result.planned is not None else None,
        endpoint=redact_urls(spec.endpoint or "") or None,
        server_metrics=server or None,
        serving_notes=tuple(terminal_safe(redact_urls(n)) for n in notes) or None, requests_file=name,
        replay_prefix_reuse_asked=asked)
    metrics = numbers.as_metrics()
    return {k: v for k, v in metrics.items() if not (isinstance(v, float) and not math.isfinite(v))}
