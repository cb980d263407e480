"""The server's gauges during a stage: its /metrics scraped every SAMPLE_INTERVAL_S while the
stage runs (the client fetches the text only; it is parsed after the stage, off the measured
loop), as a time series and the stage's mean and max of

- queue length: requests waiting for the engine (vLLM and perfkit serve `num_requests_waiting`,
  SGLang `sglang:num_queue_reqs`, llama.cpp `llamacpp:requests_deferred`), summed over engines;
- KV-cache usage, 0..1 (vLLM `kv_cache_usage_perc`, older `gpu_cache_usage_perc`, SGLang
  `sglang:token_usage`, llama.cpp `llamacpp:kv_cache_usage_ratio`), averaged over engines.

A gauge read once after the stage sees an idle server (a KV cache emptied, a queue drained);
these say what the server held while it was loaded. Pure, but for the scrape times it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfkit.workloads.serving.telemetry.plausible import DROPPED, count_or_none, fraction_or_none
from perfkit.workloads.serving.telemetry.prometheus import parse

SAMPLE_INTERVAL_S = 0.25
MAX_SAMPLES = 2400  # ten minutes at the interval; a longer stage keeps its first ones
QUEUE = ("vllm:num_requests_waiting", "perfkit:num_requests_waiting", "sglang:num_queue_reqs",
         "llamacpp:requests_deferred")
KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "perfkit:kv_cache_usage_perc",
      "sglang:token_usage", "llamacpp:kv_cache_usage_ratio")


def gauges(text: str) -> tuple[float | None, float | None]:
    """(queue length, KV-cache usage) of one scrape; None where the server has no such gauge, or
    where it says something out of range (a queue of 1e308, a usage of 5 or -1: telemetry/plausible.py)."""
    queue, kv, _ = _gauges(text)
    return queue, kv


def _gauges(text: str) -> tuple[float | None, float | None, int]:
    """`gauges`, and how many of the two the scrape gave out of range."""
    values = parse(text).values
    queue = [v for (name, _), v in values.items() if name in QUEUE and v == v]
    kv_by_name: dict[str, list[float]] = {}
    for (name, _), v in values.items():
        if name in KV and v == v:
            kv_by_name.setdefault(name, []).append(v)
    kv_name = next((n for n in KV if n in kv_by_name), None)
    kv_said = sum(kv_by_name[kv_name]) / len(kv_by_name[kv_name]) if kv_name else None
    q = count_or_none(sum(queue)) if queue else None
    kv = fraction_or_none(kv_said) if kv_said is not None else None
    return q, kv, int(bool(queue) and q is None) + int(kv_said is not None and kv is None)


def _stats(values: Sequence[float]) -> tuple[float, float]:
    return sum(values) / len(values), max(values)


def stage_series(samples: Sequence[tuple[float, str]]) -> tuple[dict[str, float], dict[str, Any]]:
    """(the stage's mean / max of each gauge, as server_* numbers; the series: t_s from the
    stage's start, queue_len, kv_cache_usage, None where a scrape lacked one); ({}, {}) when no
    scrape had either gauge."""
    t_s, queue, kv = [], [], []
    refused = 0
    for t, text in samples[:MAX_SAMPLES]:
        q, k, out_of_range = _gauges(text)
        refused += out_of_range
        if q is None and k is None:
            continue
        t_s.append(round(t, 4))
        queue.append(q)
        kv.append(k)
    stats: dict[str, float] = {}
    for key, series in (("server_queue_len", queue), ("server_kv_cache_usage", kv)):
        present = [v for v in series if v is not None]
        if present:
            stats[f"{key}_mean"], stats[f"{key}_max"] = _stats(present)
    if refused:
        stats[DROPPED] = refused
    if not t_s:
        return stats, {}
    return stats, {"interval_s": SAMPLE_INTERVAL_S, "t_s": t_s, "queue_len": queue, "kv_cache_usage": kv}
