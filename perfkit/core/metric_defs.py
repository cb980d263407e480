"""The one description of every workload metric: name, unit, better direction, definition.

The store records a point's workload metrics by it (unit, direction, which are gated), the gate
compares them by it, and every view (terminal, HTML, Markdown, dashboard) labels and formats them
by it. A metric not described here (a custom workload's own number) gets its unit and direction
from its name (`infer_unit_direction`) and is shown under its key.

`unit` is the stored unit (as earlier runs stored it, so old stores stay comparable); `shown_as`
is how a view formats the value when that differs ("fraction": as a percentage). Metrics that
describe the point rather than measure it (analytic bytes per step, world size, cache length)
are not gated: `gated=False`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfkit.core.direction import HIGHER, LOWER

FRACTION = "fraction"  # shown_as: a ratio shown as a percentage


@dataclass(frozen=True)
class MetricDef:
    key: str  # the name in a point's `metrics` (and after the `<point key>:` of a stored metric)
    label: str  # how a view names it
    unit: str  # stored unit: s, tok/s, B/s, flop/s, '' (a plain number)
    direction: str  # LOWER or HIGHER is better
    definition: str
    gated: bool = True  # a measurement the gate compares (False: describes the point)
    headline: bool = False  # in the terminal's one-line summary of the point
    shown_as: str = ""  # FRACTION: formatted as a percentage
    path: tuple[str, str] | None = None  # (key, field) of a nested value: ('itl_s', 'p50')


def _m(key: str, label: str, unit: str, direction: str, definition: str, **kw: Any) -> MetricDef:
    return MetricDef(key, label, unit, direction, definition, **kw)


_SENT = "from the request's send"
_SCHED = "from its scheduled arrival (client queueing included)"
_PCT = {"p50": "median", "p90": "90th percentile", "p99": "99th percentile", "mean": "mean"}
_SERVING_LATENCIES = (
    # prefix, label, what, gated percentiles, headline percentiles
    ("ttft", "TTFT", f"time to first token: first output token received, {_SENT}", ("p50", "p99"), ("p50",)),
    ("ttft_sched", "TTFT from schedule", f"time to first token {_SCHED}", ("p50",), ()),
    ("ttfa", "TTFA", f"time to first answer token (reasoning models): first chunk with answer text "
     f"(delta.content), not reasoning (delta.reasoning_content / delta.reasoning), received, {_SENT}; "
     "only in stages with reasoning tokens", ("p50", "p99"), ()),
    ("tpot", "TPOT", "time per output token (vLLM): (E2E - TTFT) / (timed tokens - 1) per request "
     "with two or more timed tokens", ("p50",), ("p50",)),
    ("token_itl", "ITL", "per-token inter-token latency: a chunk of k tokens gives k gaps of (its time - "
     "the previous chunk's) / k, pooled over requests; only when every request's tokens were counted "
     "(not one per chunk)", ("p99",), ("p99",)),
    ("chunk_gap", "chunk gap", "time between consecutive chunks that carried tokens, pooled over "
     "requests (a chunk may carry several tokens)", (), ()),
    ("e2e", "E2E", f"end-to-end latency: last output token received, {_SENT}", ("p50",), ()),
    ("e2e_sched", "E2E from schedule", f"end-to-end latency {_SCHED}", (), ()),
)
_SERVING_PERCENTILES = {"ttft": ("p50", "p90", "p99", "mean"), "tpot": ("p50", "p90", "p99", "mean"),
                        "token_itl": ("p50", "p90", "p99")}


def _serving() -> tuple[MetricDef, ...]:
    """The serving stage's metrics (workloads/serving/measurements/summary.py), one per key it emits."""
    out = []
    for prefix, label, what, gated, headline in _SERVING_LATENCIES:
        for pct in _SERVING_PERCENTILES.get(prefix, ("p50", "p99")):
            out.append(_m(f"{prefix}_{pct}_s", f"{label} {pct}", "s", LOWER, f"{what}; {_PCT[pct]} over "
                          "the stage", gated=pct in gated, headline=pct in headline))
    return (
        *out,
        _m("request_per_s", "requests/s", "1/s", HIGHER, "succeeded requests / stage duration", gated=False),
        _m("output_tok_per_s", "output tok/s", "tok/s", HIGHER, "output tokens (usage, else timed) of the "
           "succeeded requests / stage duration", headline=True),
        _m("input_tok_per_s", "input tok/s", "tok/s", HIGHER, "prompt tokens of the succeeded requests / "
           "stage duration", gated=False),
        _m("total_tok_per_s", "total tok/s", "tok/s", HIGHER, "input + output tokens of the succeeded "
           "requests / stage duration", gated=False),
        _m("interactivity_tok_per_s", "interactivity", "tok/s", HIGHER, "tokens per second per user: "
           "1 / TPOT p50", gated=False),
        _m("reasoning_tok_per_req_mean", "reasoning tok/req", "", LOWER, "reasoning tokens per succeeded "
           "request, mean (the server's usage.completion_tokens_details.reasoning_tokens, else counted "
           "from the chunks with reasoning text); only in stages with reasoning tokens", gated=False),
        _m("answer_tok_per_req_mean", "answer tok/req", "", LOWER, "output tokens that are not reasoning "
           "tokens per succeeded request, mean; only in stages with reasoning tokens", gated=False),
        _m("goodput_req_per_s", "goodput", "1/s", HIGHER, "requests meeting every SLO threshold (TTFT, "
           "TPOT, E2E) / stage duration (vLLM goodput)"),
        _m("goodput_tok_per_s", "goodput tok/s", "tok/s", HIGHER, "output tokens of the requests meeting "
           "every SLO threshold / stage duration", headline=True),
        _m("slo_attainment", "SLO attainment", "", HIGHER, "share of the stage's requests (failed ones "
           "included) meeting every SLO threshold", shown_as=FRACTION),
        _m("usd_per_1m_output_tok", "USD/1M output tok", "USD", LOWER, "(USD per GPU-hour x GPUs / 3600) / "
           "output tok/s x 1e6", headline=True),
        _m("usd_per_1m_input_tok", "USD/1M input tok", "USD", LOWER, "(USD per GPU-hour x GPUs / 3600) / "
           "input tok/s x 1e6", gated=False),
        _m("usd_energy_per_1m_output_tok", "energy USD/1M output tok", "USD", LOWER, "GPU energy J / output "
           "tokens x 1e6 / 3.6e6 x USD per kWh (--price-per-kwh; energy from NVML or a DCGM exporter)",
           gated=False),
        _m("usd_per_1m_total_tok", "USD/1M total tok", "USD", LOWER, "(USD per GPU-hour x GPUs / 3600) / "
           "total tok/s x 1e6", gated=False),
        _m("usd_per_1m_output_tok_at_slo", "USD/1M output tok at SLO", "USD", LOWER, "(USD per GPU-hour x "
           "GPUs / 3600) / goodput tok/s x 1e6"),
        _m("steady_output_tok_per_s", "steady output tok/s", "tok/s", HIGHER, "output tokens arriving in "
           "the steady window / its length (SGLang: the longest window with in-flight >= 90% of the "
           "peak)", gated=False),
        _m("steady_ttft_p50_s", "steady TTFT p50", "s", LOWER, "TTFT median of the requests sent and "
           "finished inside the steady window", gated=False),
        _m("steady_tpot_p50_s", "steady TPOT p50", "s", LOWER, "TPOT median of the requests sent and "
           "finished inside the steady window", gated=False),
        _m("requests_ok", "requests ok", "", HIGHER, "requests that succeeded (sent, tokens, no error)",
           gated=False),
        _m("requests_failed", "requests failed", "", LOWER, "requests that failed or were never sent",
           gated=False),
        _m("requests_planned", "requests planned", "", HIGHER, "requests the stage's plan would send (absent "
           "when its duration bounds it)", gated=False),
        _m("duration_s", "duration", "s", LOWER, "the stage's duration that rates divide by", gated=False),
        _m("steady_start_s", "steady start", "s", LOWER, "start of the steady window, from the stage's "
           "start", gated=False),
        _m("steady_end_s", "steady end", "s", LOWER, "end of the steady window, from the stage's start",
           gated=False),
        _m("in_flight_peak", "peak in flight", "", HIGHER, "most requests in flight at once (sent, "
           "stream not ended)", gated=False),
        _m("client_lag_p99_s", "client loop lag p99", "s", LOWER, "99th percentile of how long a callback "
           "queued on the load client's event loop waited to run (workloads/serving/client/lag.py)", gated=False),
        _m("send_late_p99_s", "send lateness p99", "s", LOWER, "open loop: 99th percentile of when the "
           "client woke for an arrival minus the arrival time", gated=False),
        # the server's own counters over the stage (workloads/serving/telemetry/prometheus.py)
        _m("server_prompt_tokens", "server prompt tokens", "", LOWER, "prompt tokens the server counted "
           "during the stage (its /metrics)", gated=False),
        _m("server_generation_tokens", "server generated tokens", "", HIGHER, "tokens the server "
           "generated during the stage (its /metrics)", gated=False),
        _m("server_prefix_cache_hit_rate", "prefix cache hit rate", "", HIGHER, "prefix-cache hit tokens "
           "/ queried tokens during the stage (server /metrics)", gated=False, shown_as=FRACTION),
        _m("server_kv_cache_usage", "KV cache usage", "", LOWER, "share of the KV cache in use at the "
           "stage's end (server gauge)", gated=False, shown_as=FRACTION),
        _m("server_kv_cache_usage_mean", "KV cache usage (mean)", "", LOWER, "share of the KV cache in use, "
           "mean of the server gauge sampled during the stage", gated=False, shown_as=FRACTION),
        _m("server_kv_cache_usage_max", "KV cache usage (max)", "", LOWER, "share of the KV cache in use, "
           "max of the server gauge sampled during the stage", gated=False, shown_as=FRACTION),
        _m("server_queue_len_mean", "server queue (mean)", "", LOWER, "requests waiting in the server "
           "(num_requests_waiting / num_queue_reqs), mean of the gauge sampled during the stage", gated=False),
        _m("server_queue_len_max", "server queue (max)", "", LOWER, "requests waiting in the server, max of "
           "the gauge sampled during the stage", gated=False),
        _m("server_preemptions", "preemptions", "", LOWER, "requests the server preempted during the "
           "stage", gated=False),
        _m("server_spec_acceptance_rate", "draft acceptance", "", HIGHER, "speculative decoding: accepted "
           "/ drafted tokens during the stage", gated=False, shown_as=FRACTION),
        _m("server_spec_mean_accepted_length", "mean accepted length", "", HIGHER, "speculative decoding: "
           "1 + accepted tokens / drafts (tokens per target step)", gated=False),
        # multi-turn sessions and the server's prompt cache (measurements/sessions.py)
        _m("sessions", "sessions", "", HIGHER, "multi-turn sessions that sent at least one turn", gated=False),
        _m("session_turns_mean", "turns per session", "", HIGHER, "turns completed (succeeded) per session, "
           "mean over the sessions", gated=False),
        _m("session_duration_p50_s", "session duration p50", "s", LOWER, "a session's first send to its last "
           "turn's end (think times included); median over the sessions"),
        _m("session_duration_mean_s", "session duration mean", "s", LOWER, "a session's first send to its last "
           "turn's end (think times included); mean over the sessions", gated=False),
        _m("session_ttft_mean_p50_s", "session mean TTFT p50", "s", LOWER, "each session's mean TTFT over its "
           "succeeded turns; median over the sessions"),
        _m("prompt_cache_share", "prompt cache share", "", HIGHER, "cached prompt tokens / prompt tokens over the "
           "succeeded requests whose server said usage.prompt_tokens_details.cached_tokens", gated=False,
           shown_as=FRACTION),
        _m("prompt_cache_reported", "requests with cached tokens", "", HIGHER, "succeeded requests whose server "
           "said usage.prompt_tokens_details.cached_tokens", gated=False),
        _m("prompt_cached_tokens", "cached prompt tokens", "", HIGHER, "sum of the cached prompt tokens the "
           "server said (usage.prompt_tokens_details.cached_tokens)", gated=False),
        _m("replay_prefix_reuse_asked", "prefix reuse asked", "", HIGHER, "a Mooncake trace's prompt tokens an "
           "earlier request shares (leading hash ids) / prompt tokens, over the requests prompt_cache_share counts",
           gated=False, shown_as=FRACTION),
    )


def _memory() -> tuple[MetricDef, ...]:
    """The memory pass's metrics (perfkit/pipeline/memory_pass.py): one per key it emits."""
    during = "during one call of the timed callable in the memory pass (median over its calls)"
    return (
        _m("peak_allocated_bytes", "peak allocated", "B", LOWER, f"highest bytes in live tensors {during}; "
           "CUDA: torch.cuda.memory_stats allocated peak; CPU: live tensor storages before the pass + "
           "the profiler's peak rise", headline=True),
        _m("peak_reserved_bytes", "peak reserved", "B", LOWER, f"highest bytes the caching allocator held "
           f"from the device {during} (CUDA only)"),
        _m("activation_peak_bytes", "activation peak", "B", LOWER, f"peak allocated {during} minus what "
           "was allocated before it"),
        _m("fragmentation_at_peak_bytes", "fragmentation at peak", "B", LOWER, "reserved - allocated at "
           "the moment allocated bytes peaked (replay of the pass's memory snapshot; CUDA only)"),
        _m("external_fragmentation", "external fragmentation", "", LOWER, "1 - largest free block / total "
           "free bytes of the snapshot's segments at the end of the pass (CUDA only; 0: free memory is "
           "one block)", gated=False, shown_as=FRACTION),
    )


METRICS: tuple[MetricDef, ...] = (
    # decode (workloads/decode/metrics.py; vLLM and Databricks definitions)
    _m("ttft_s", "TTFT", "s", LOWER, "time to first token: first output token ready minus the start of "
       "prefill; median over the timed generations", headline=True),
    _m("tpot_s", "TPOT", "s", LOWER, "time per output token (vLLM): (E2E - TTFT) / (output_tokens - 1) per "
       "generation; median over the timed generations", headline=True),
    _m("itl_p50_s", "ITL p50", "s", LOWER, "inter-token latency, 50th percentile of every gap between "
       "consecutive output tokens, pooled over the timed generations", headline=True, path=("itl_s", "p50")),
    _m("itl_p90_s", "ITL p90", "s", LOWER, "inter-token latency, 90th percentile (nearest rank)",
       headline=True, path=("itl_s", "p90")),
    _m("itl_p99_s", "ITL p99", "s", LOWER, "inter-token latency, 99th percentile (nearest rank)",
       headline=True, path=("itl_s", "p99")),
    _m("e2e_s", "E2E", "s", LOWER, "end-to-end latency: last output token minus the start of prefill; median"),
    _m("tokens_per_s", "throughput", "tok/s", HIGHER, "batch x output_tokens / E2E (whole generation, prefill "
       "included)"),
    _m("decode_tokens_per_s", "decode", "tok/s", HIGHER, "batch / TPOT (decode phase only)",
       headline=True),
    _m("mbu", "MBU", "", HIGHER, "model bandwidth utilization (Databricks): achieved bytes/s of a decode "
       "step / peak memory bandwidth", headline=True, shown_as=FRACTION),
    _m("mfu", "MFU", "", HIGHER, "model flop utilization: achieved flop/s of a decode step / peak flop/s of "
       "the dtype", headline=True, shown_as=FRACTION),
    _m("achieved_bytes_per_s", "decode bytes/s", "B/s", HIGHER, "(weight + KV bytes of a decode step) / TPOT"),
    _m("achieved_flop_per_s", "decode flop/s", "flop/s", HIGHER, "analytic flop of a decode step / TPOT"),
    _m("step_mbu", "timed MBU", "", HIGHER, "MBU of the timed callable: its analytic bytes / the timer's "
       "median / peak bandwidth", shown_as=FRACTION),
    _m("step_mfu", "timed MFU", "", HIGHER, "MFU of the timed callable: its analytic flop / the timer's "
       "median / peak flop/s", shown_as=FRACTION),
    _m("mbu_read", "MBU (read roof)", "", HIGHER, "achieved bytes/s of a decode step / the measured "
       "read-only bandwidth (perfkit calibrate's dram_read; decode mostly reads)", shown_as=FRACTION),
    _m("step_mbu_read", "timed MBU (read roof)", "", HIGHER, "the timed callable's analytic bytes / the "
       "timer's median / the measured read-only bandwidth", shown_as=FRACTION),
    _m("output_tokens", "output tokens", "", LOWER, "tokens generated per sequence", gated=False),
    _m("weight_bytes_per_step", "weight bytes/step", "", LOWER, "analytic weight bytes one decode step reads",
       gated=False),
    _m("kv_bytes_per_step", "KV bytes/step", "", LOWER, "analytic KV cache bytes one decode step reads and "
       "writes", gated=False),
    _m("flop_per_step", "flop/step", "", LOWER, "analytic flop of one decode step", gated=False),
    _m("cache_len", "cache length", "", LOWER, "KV cache slots allocated", gated=False),
    _m("mean_context", "mean context", "", LOWER, "mean context length of the decode steps", gated=False),
    _m("tp", "TP ranks", "", LOWER, "ranks the model is split over", gated=False),
    # collectives (workloads/collectives/cost.py; nccl-tests definitions)
    _m("algbw_bytes_per_s", "algbw", "B/s", HIGHER, "algorithm bandwidth: message bytes S / time",
       headline=True),
    _m("busbw_bytes_per_s", "busbw", "B/s", HIGHER, "bus bandwidth: algbw x the op's bus factor "
       "(nccl-tests), comparable to a link's bandwidth whatever the rank count", headline=True),
    _m("bus_factor", "bus factor", "", LOWER, "busbw / algbw of the op on this many ranks", gated=False),
    _m("world_size", "ranks", "", LOWER, "ranks taking part", gated=False),
    # MoE (workloads/moe/)
    _m("load_imbalance", "load imbalance", "", LOWER, "max tokens per expert / mean (1.0 = perfectly "
       "balanced)", headline=True),
    _m("rank_load_imbalance", "rank load imbalance", "", LOWER, "max tokens per rank / mean: the busiest "
       "rank's expert work over the mean", headline=True),
    _m("experts_touched", "experts touched", "", LOWER, "experts with at least one token", gated=False),
    _m("tokens_per_expert", "tokens per expert", "", LOWER, "routed (token, slot) pairs per expert",
       gated=False),
    _m("tokens_per_rank", "tokens per rank", "", LOWER, "slots each rank's experts process", gated=False),
    _m("all_to_all_bytes", "all_to_all bytes", "", LOWER, "activation bytes crossing ranks in one forward",
       gated=False),
    _m("all_to_all_bytes_by_rank", "all_to_all bytes by rank", "", LOWER, "bytes each rank sends in one "
       "forward", gated=False),
    # capacity at an SLO (workloads/serving/capacity_point.py; one value per search: not gated)
    _m("capacity_proven_concurrency", "capacity (proven)", "", HIGHER, "the highest concurrency at which every "
       "quantile SLO was proven at the spec's confidence (MLPerf LoadGen's early-stopping rule)", gated=False,
       headline=True),
    _m("capacity_estimate_concurrency", "capacity (estimate)", "", HIGHER, "the highest concurrency at which "
       "every SLO's stage quantile held, proven or not", gated=False),
    _m("capacity_proven_rate", "capacity (proven)", "1/s", HIGHER, "the highest request rate at which every "
       "quantile SLO was proven at the spec's confidence", gated=False, headline=True),
    _m("capacity_estimate_rate", "capacity (estimate)", "1/s", HIGHER, "the highest request rate at which every "
       "SLO's stage quantile held, proven or not", gated=False),
    _m("capacity_stages", "capacity stages", "", LOWER, "stages the capacity search ran", gated=False),
    # the timer against the trace (pipeline/point_runner.py, profiler/inflation.py; docs/timing.md)
    _m("timer_inflation", "timer inflation", "", LOWER, "timer median per call / the kernels' own (CUPTI) "
       "time per call in the point's trace - 1; only for points whose kernels take < 50 us per call",
       gated=False, shown_as=FRACTION),
    # memory (profile: {memory: true}; pipeline/memory_pass.py, docs/memory-budget.md)
    *_memory(),
    # serving (workloads/serving/measurements/summary.py; vLLM's definitions, REFERENCE.md "Serving metrics").
    # Percentiles: numpy "linear" over the succeeded requests of a stage (ITL: pooled gaps).
    *_serving(),
)
BY_KEY: dict[str, MetricDef] = {d.key: d for d in METRICS}
# Suffix -> (unit, direction), longest first: metrics not described above are named with units.
_SUFFIXES: tuple[tuple[str, str, str], ...] = (
    ("tok_per_s", "tok/s", HIGHER),
    ("tokens_per_s", "tok/s", HIGHER),
    ("flop_per_s", "flop/s", HIGHER),
    ("bytes_per_s", "B/s", HIGHER),
    ("per_s", "1/s", HIGHER),
    ("_pct", "%", HIGHER),
    ("_ms", "ms", LOWER),
    ("_us", "us", LOWER),
    ("_ns", "ns", LOWER),
    ("_s", "s", LOWER),
    ("_bytes", "B", LOWER),
)
_HIGHER_WORDS = ("throughput", "bandwidth", "mfu", "mbu", "speedup", "efficiency")


# Prefix -> (unit, direction): the serving cost front's per-target metrics
# (usd_per_1m_output_tok_at_20_tok_per_user, throughput_per_gpu_at_20_tok_per_user).
_PREFIXES: tuple[tuple[str, str, str], ...] = (
    ("usd_per_", "USD", LOWER),
    ("throughput_per_gpu_at_", "tok/s", HIGHER),
)


def infer_unit_direction(name: str) -> tuple[str, str]:
    """Unit and better direction of a metric not described here, from its name (else: lower)."""
    low = name.lower()
    for prefix, unit, direction in _PREFIXES:
        if low.startswith(prefix):
            return unit, direction
    for suffix, unit, direction in _SUFFIXES:
        if low.endswith(suffix):
            return unit, direction
    if any(w in low for w in _HIGHER_WORDS):
        return "", HIGHER
    return "", LOWER


def metric_def(key: str) -> MetricDef:
    """The description of `key`: the registry's, else one inferred from the name (gated)."""
    known = BY_KEY.get(key)
    if known is not None:
        return known
    unit, direction = infer_unit_direction(key)
    return MetricDef(key, key, unit, direction, "")


def numbers(value: Any) -> tuple[float, ...] | None:
    """A number or a non-empty list of numbers as finite floats; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return (float(value),) if math.isfinite(float(value)) else None
    if (isinstance(value, Sequence) and not isinstance(value, str) and value
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        out = tuple(float(v) for v in value)
        return out if all(math.isfinite(v) for v in out) else None
    return None


def _generation_samples(metrics: Mapping[str, Any]) -> dict[str, tuple[float, ...]]:
    """Per-generation TTFT / TPOT / E2E of a one-rank decode point (their medians are the stored
    values), so the gate tests them like times; {} when the point has no such generations."""
    gens = metrics.get("generations")
    if not isinstance(gens, list) or not gens or not all(numbers(g) for g in gens):
        return {}
    times = [numbers(g) or () for g in gens]
    out = {"ttft_s": tuple(g[0] for g in times), "e2e_s": tuple(g[-1] for g in times)}
    if all(len(g) > 1 for g in times):
        out["tpot_s"] = tuple((g[-1] - g[0]) / (len(g) - 1) for g in times)
    # only where they give the stored value back (the same median)
    return {k: v for k, v in out.items() if _same(metrics.get(k), statistics.median(v))}


def _request_samples(metrics: Mapping[str, Any], field: str = "request_samples") -> dict[str, tuple[float, ...]]:
    """Per-request values of a serving stage (`request_samples`: metric key -> one value per
    request; `window_samples`: one value per window or batch of requests of a serving stage;
    `memory_samples`: one value per call of the memory pass) for the described metrics
    whose stored value is their median, so the gate tests the samples themselves; {} when the
    point has none."""
    given = metrics.get(field)
    if not isinstance(given, Mapping):
        return {}
    out = {}
    for key, values in given.items():
        nums = numbers(values)
        if key in BY_KEY and nums is not None and _same(metrics.get(key), statistics.median(nums)):
            out[key] = nums
    return out


def _same(stored: Any, value: float) -> bool:
    return isinstance(stored, (int, float)) and math.isclose(float(stored), value, rel_tol=1e-9)


def metric_values(metrics: Mapping[str, Any]) -> list[tuple[MetricDef, tuple[float, ...]]]:
    """The numbers of a point's `metrics` dict with their descriptions: described metrics first
    (registry order, nested ones such as the ITL percentiles included), then the others by name.
    A value is a tuple of samples (one for a single number; per generation or per request where
    the point keeps those and their median is the stored value)."""
    samples = {**_generation_samples(metrics), **_request_samples(metrics),
               **_request_samples(metrics, "window_samples"), **_request_samples(metrics, "memory_samples")}
    out: list[tuple[MetricDef, tuple[float, ...]]] = []
    for d in METRICS:
        raw = metrics.get(d.path[0], {}) if d.path else metrics
        value = raw.get(d.path[1] if d.path else d.key) if isinstance(raw, Mapping) else None
        nums = samples.get(d.key) or numbers(value)
        if nums is not None:
            out.append((d, nums))
    for key in sorted(k for k in metrics if k not in BY_KEY):
        nums = numbers(metrics[key])
        if nums is not None:
            out.append((metric_def(key), nums))
    return out
