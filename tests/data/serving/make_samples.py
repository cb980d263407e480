"""Write the sample result files of this folder (see README.md): python make_samples.py.

Small runs, made up here in each tool's real layout (field names, nesting, units, the
aggregates computed from the per-request values the way the tool computes them), so the
tests check the readers against files that look like what the tools write.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
TRACEBACK = ('Traceback (most recent call last):\n  File "endpoint_request_func.py", line 198, in '
             'async_request_openai_completions\n    async for chunk_bytes in response.content:\n'
             'aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed')


def r6(x: float) -> float:
    return round(float(x), 6)


def write(rel: str, obj: object, *, lines: bool = False, indent: int | None = None) -> None:
    path = HERE / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if lines:
        assert isinstance(obj, list)
        path.write_text("".join(json.dumps(o) + "\n" for o in obj))
    else:
        path.write_text(json.dumps(obj, indent=indent) + ("\n" if indent else ""))


# -- vLLM ---------------------------------------------------------------------------------------


def _stats(out: dict, name: str, values: list[float], percentiles: tuple[float, ...]) -> None:
    ms = np.asarray(values or [0.0]) * 1000
    out[f"mean_{name}_ms"] = float(np.mean(ms))
    out[f"median_{name}_ms"] = float(np.median(ms))
    out[f"std_{name}_ms"] = float(np.std(ms))
    for p in percentiles:
        word = str(int(p)) if int(p) == p else str(p)
        out[f"p{word}_{name}_ms"] = float(np.percentile(ms, p))


def vllm_detailed() -> dict:
    rng = random.Random(7)
    base, t = 81234.517302, 0.0
    columns: list[list[Any]] = [[] for _ in range(9)]
    starts, queues, ttfts, itls, outs, ins, lats, errors, texts = columns
    for i in range(6):
        t += rng.expovariate(4.0)
        queue = 0.0 if i < 4 else rng.uniform(0.01, 0.03)
        starts.append(r6(base + t + queue))
        queues.append(r6(queue))
        ins.append(rng.randint(120, 136))
        if i == 4:  # failed mid-stream: vLLM keeps ttft 0, no itls, output 0
            for column, value in ((ttfts, 0.0), (itls, []), (outs, 0), (lats, 0.0),
                                  (errors, TRACEBACK), (texts, "")):
                column.append(value)
            continue
        ttft = rng.uniform(0.028, 0.061)
        gaps = [r6(rng.uniform(0.0105, 0.0135)) for _ in range(15 if i != 2 else 9)]
        ttfts.append(r6(ttft))
        itls.append(gaps)
        outs.append(16 if i != 2 else 12)  # request 2: usage says 12 tokens in 10 chunks
        lats.append(r6(ttft + sum(gaps)))
        errors.append("")
        texts.append(" the" * outs[-1])
    ok = [i for i, e in enumerate(errors) if not e]
    duration = max(starts[i] + lats[i] for i in ok) - (base + 0.0) + 0.002
    tpots = [(lats[i] - ttfts[i]) / (outs[i] - 1) for i in ok]
    result: dict = {
        "date": "20251014-093012", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": 6, "request_rate": 4.0,
        "burstiness": 1.0, "max_concurrency": 8, "duration": r6(duration), "completed": len(ok),
        "failed": 6 - len(ok), "total_input_tokens": sum(ins[i] for i in ok),
        "total_output_tokens": sum(outs), "request_throughput": len(ok) / duration,
        "request_goodput": None, "output_throughput": sum(outs) / duration,
        "total_token_throughput": (sum(ins[i] for i in ok) + sum(outs)) / duration,
        "input_lens": ins, "output_lens": outs, "ttfts": ttfts, "itls": itls, "latencies": lats,
        "start_times": starts, "queue_times": queues, "generated_texts": texts, "errors": errors,
        "max_output_tokens_per_s": 61.0, "max_concurrent_requests": 3, "rtfx": 0.0,
    }
    pct = (99.0,)
    _stats(result, "ttft", [ttfts[i] for i in ok], pct)
    _stats(result, "tpot", tpots, pct)
    _stats(result, "itl", [g for i in ok for g in itls[i]], pct)
    _stats(result, "e2el", [lats[i] for i in ok], pct)
    _stats(result, "client_queue_time", [queues[i] for i in ok], pct)
    _stats(result, "e2el_including_client_queue", [lats[i] + queues[i] for i in ok], pct)
    return result


def vllm_summary_only(rate: object, concurrency: int | None, scale: float) -> dict:
    """--save-result --append-result without --save-detailed: the per-request lists removed."""
    out = {"date": "20251014-101500", "endpoint_type": "openai-chat", "backend": "openai-chat",
           "label": "sweep", "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": 200,
           "request_rate": rate, "burstiness": 1.0, "max_concurrency": concurrency,
           "duration": 41.2 * scale, "completed": 200, "failed": 0, "total_input_tokens": 204800,
           "total_output_tokens": 25600, "request_throughput": 200 / (41.2 * scale),
           "request_goodput": None, "output_throughput": 25600 / (41.2 * scale),
           "total_token_throughput": 230400 / (41.2 * scale), "latencies": [],
           "queue_times": [], "max_output_tokens_per_s": 812.0, "max_concurrent_requests": 64,
           "rtfx": 0.0}
    for name, base in (("ttft", 48.0), ("tpot", 11.5), ("itl", 11.4), ("e2el", 1509.0)):
        out[f"mean_{name}_ms"] = base * scale
        out[f"median_{name}_ms"] = base * scale * 0.96
        out[f"std_{name}_ms"] = base * scale * 0.2
        out[f"p99_{name}_ms"] = base * scale * 1.9
    return out


# -- AIPerf -------------------------------------------------------------------------------------


def _mv(value: object, unit: str) -> dict:
    return {"value": value, "unit": unit}


def _json_stats(values: list[float], unit: str) -> dict:
    a = np.asarray(values, dtype=float)
    out: dict = {"unit": unit, "avg": float(a.mean())}
    for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        out[f"p{p}"] = float(np.percentile(a, p))
    out |= {"min": float(a.min()), "max": float(a.max()), "std": float(a.std())}
    return out


def aiperf_run(new: bool) -> tuple[list[dict], dict]:
    """(profile_export.jsonl records, profile_export_aiperf.json); `new`: 0.10's layout."""
    rng = random.Random(11 if new else 5)
    t_ns = 1759813207_532900363
    records: list[dict[str, Any]] = []
    ok: list[tuple[Any, ...]] = []
    for n in range(7):
        phase = "warmup" if n == 0 else "profiling"
        credit = t_ns
        start = t_ns + (rng.randint(90_000, 400_000) if new else 0)
        isl = rng.randint(540, 560)
        meta = {"session_num": n, "x_request_id": f"7609a2e7-aa53-4ab1-98f4-f35ecafe{n:04d}",
                "x_correlation_id": f"32ee4f33-cfca-4cfc-988f-79b45408{n:04d}",
                "conversation_id": f"77aa5b0e-b305-423f-88d5-c00da189{n:04d}", "turn_index": 0}
        if new:
            meta = {"request_num": n, **meta, "credit_issued_ns": credit,
                    "credit_received_ns": credit + 41_000}
        if n == 5:  # an HTTP error / a cancelled request
            end = start + 623_000 if new else start + 88_000_000
            meta |= {"request_start_ns": start, "request_ack_ns": None, "request_end_ns": end,
                     "worker_id": "worker_359d423a", "record_processor_id": "record_processor_1fa47cd7",
                     "benchmark_phase": phase, "was_cancelled": new,
                     "cancellation_time_ns": end if new else None}
            error = ({"code": 499, "type": "RequestCancellationError",
                      "message": "Request was cancelled after 0.000 seconds"} if new else
                     {"code": 500, "type": "Internal Server Error",
                      "message": "{\"object\":\"error\",\"message\":\"KV cache exhausted\"}"})
            records.append({"metadata": meta, "metrics": {"error_isl": _mv(isl, "tokens")},
                            "error": error})
            t_ns = start + rng.randint(200, 400) * 1_000_000
            continue
        ttft_ms = rng.uniform(60.0, 140.0)
        osl = 9 if n != 3 else 10  # record 3: 10 tokens in 9 chunks
        icl = [round(rng.uniform(4.6, 5.8), 6) for _ in range(8)]
        latency_ms = ttft_ms + sum(icl)
        end = start + round(latency_ms * 1e6)
        meta |= {"request_start_ns": start, "request_ack_ns": start + round(ttft_ms * 0.4e6),
                 "request_end_ns": end, "worker_id": "worker_359d423a",
                 "record_processor_id": "record_processor_1fa47cd7", "benchmark_phase": phase,
                 "was_cancelled": False, "cancellation_time_ns": None}
        itl_ms = (latency_ms - ttft_ms) / (osl - 1)
        metrics = {"input_sequence_length": _mv(isl, "tokens"),
                   "time_to_first_token": _mv(ttft_ms, "ms"),
                   "request_latency": _mv(latency_ms, "ms"),
                   "output_token_count": _mv(osl, "tokens"),
                   "time_to_second_token": _mv(icl[0], "ms"),
                   "inter_chunk_latency": _mv(icl, "ms"),
                   "output_sequence_length": _mv(osl, "tokens"),
                   "inter_token_latency": _mv(itl_ms, "ms"),
                   "output_token_throughput_per_user": _mv(1000.0 / itl_ms, "tokens/sec/user")}
        rec = {"metadata": meta, "metrics": metrics}
        if not new:
            rec["error"] = None  # 0.1-0.3 write the null; 0.10 leaves it out
        records.append(rec)
        if phase == "profiling":
            ok.append((start, end, ttft_ms, icl, latency_ms, osl, isl, itl_ms))
        t_ns = start + rng.randint(200, 400) * 1_000_000
    prof = [r for r in records if r["metadata"]["benchmark_phase"] == "profiling"]
    t0 = min(r["metadata"]["request_start_ns"] for r in prof)
    t1 = max(r["metadata"]["request_end_ns"] for r in prof)
    dur_s = (t1 - t0) / 1e9
    total_osl = sum(o[5] for o in ok)
    summary: dict = {}
    if new:
        summary |= {"schema_version": "1.3", "aiperf_version": "0.10.0", "benchmark_id": "f7db269e44e9"}
    summary |= {
        "request_throughput": {"unit": "requests/sec", "avg": len(ok) / dur_s},
        "request_latency": _json_stats([o[4] for o in ok], "ms"),
        "request_count": {"unit": "requests", "avg": float(len(ok))},
        "time_to_first_token": _json_stats([o[2] for o in ok], "ms"),
        "time_to_second_token": _json_stats([o[3][0] for o in ok], "ms"),
        "inter_token_latency": _json_stats([o[7] for o in ok], "ms"),
        "output_token_throughput": {"unit": "tokens/sec", "avg": total_osl / dur_s},
        "output_token_throughput_per_user": _json_stats([1000 / o[7] for o in ok], "tokens/sec/user"),
        "output_sequence_length": _json_stats([o[5] for o in ok], "tokens"),
        "input_sequence_length": _json_stats([o[6] for o in ok], "tokens"),
        "inter_chunk_latency": _json_stats([g for o in ok for g in o[3]], "ms"),
        "total_output_tokens": {"unit": "tokens", "avg": float(total_osl)},
        "benchmark_duration": {"unit": "sec", "avg": dur_s},
        "total_isl": {"unit": "tokens", "avg": float(sum(o[6] for o in ok))},
        "total_osl": {"unit": "tokens", "avg": float(total_osl)},
        "error_request_count": {"unit": "requests", "avg": 1.0},
    }
    if new:
        summary["input_config"] = {
            "models": {"items": [{"name": MODEL}]},
            "endpoint": {"urls": ["http://localhost:8000"], "type": "chat", "streaming": True},
            "phases": [{"name": "warmup", "type": "concurrency", "exclude_from_results": True,
                        "requests": 1, "concurrency": 1},
                       {"name": "profiling", "type": "poisson", "requests": 6, "rate": 2.0,
                        "concurrency": 8}],
            "tokenizer": {"name": MODEL}}
    else:
        summary["input_config"] = {
            "endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True,
                         "url": "localhost:8000"},
            "loadgen": {"concurrency": 4, "request_count": 6, "warmup_request_count": 1},
            "cli_command": f"aiperf profile --model {MODEL} --streaming --concurrency 4 "
                           "--request-count 6 --warmup-request-count 1"}
    summary |= {"was_cancelled": False,
                "error_summary": [{"error_details": records[5]["error"], "count": 1}],
                "start_time": "2025-10-07T05:00:07.532900", "end_time": "2025-10-07T05:00:09.871242"}
    return records, summary


# -- GuideLLM -----------------------------------------------------------------------------------

PCTS = {"p001": 0.1, "p01": 1, "p05": 5, "p10": 10, "p25": 25, "p50": 50, "p75": 75, "p90": 90,
        "p95": 95, "p99": 99, "p999": 99.9}


def dist(values: list[float]) -> dict:
    a = np.asarray(values or [0.0], dtype=float)
    n = len(values)
    return {"mean": float(a.mean()) if n else 0.0, "median": float(np.median(a)) if n else 0.0,
            "mode": float(a[0]) if n else 0.0, "variance": float(a.var()) if n else 0.0,
            "std_dev": float(a.std()) if n else 0.0, "min": float(a.min()) if n else 0.0,
            "max": float(a.max()) if n else 0.0, "count": n, "total_sum": float(a.sum()) if n else 0.0,
            "percentiles": {k: (float(np.percentile(a, p)) if n else 0.0) for k, p in PCTS.items()},
            "pdf": None}


def status_dist(ok: list[float], errored: list[float] | None = None) -> dict:
    errored = errored or []
    return {"successful": dist(ok), "incomplete": dist([]), "errored": dist(errored),
            "total": dist(ok + errored)}


def guidellm_request(rid: str, targeted: float, start: float, ttft: float, gaps: list[float],
                     prompt: int, status: str = "completed", error: str | None = None) -> dict:
    first = start + ttft if status == "completed" else None
    last = first + sum(gaps) if first is not None else None
    end = (last + 0.0004) if last is not None else start + 0.35
    out = len(gaps) + 1 if status == "completed" else None
    timings = {"targeted_start": targeted, "queued": targeted - 0.002, "dequeued": targeted - 0.0005,
               "scheduled_at": targeted, "resolve_start": start - 0.0002, "request_start": start,
               "first_request_iteration": start + 0.0015, "first_token_iteration": first,
               "first_output_token_iteration": first, "last_token_iteration": last,
               "last_request_iteration": last, "request_iterations": (out or 0) + 2,
               "token_iterations": out or 0, "request_end": end, "resolve_end": end + 0.0001,
               "finalized": end + 0.0009}
    info: dict[str, Any] = {"request_id": rid, "conversation_id": None, "history_len": 0, "turn_index": 0,
            "node_id": None, "agent_id": None, "parent_node_ids": [], "status": status,
            "scheduler_node_id": 0, "scheduler_process_id": 1, "scheduler_start_time": targeted - 3,
            "timings": timings, "settings": {"relative_timestamp": None, "requeue_delay": None},
            "error": error, "traceback": None, "started_at": start, "completed_at": end}
    usage_in = {"text_tokens": prompt, "cached_tokens": None, "text_words": prompt * 3 // 4,
                "text_characters": prompt * 4, "total_tokens": prompt}
    usage_out = {"text_tokens": out, "cached_tokens": None, "text_words": None,
                 "text_characters": None, "total_tokens": out}
    latency = end - start
    rec = {"type_": "generative_request_stats", "request_id": rid, "response_id": f"cmpl-{rid[:8]}",
           "request_args": None, "output": " the" * (out or 0) if out else None,
           "reasoning_output": None, "tool_calls": None, "info": info, "input_metrics": usage_in,
           "output_metrics": usage_out, "request_start_time": start, "request_end_time": end,
           "request_latency": latency, "prompt_tokens": prompt, "cached_tokens": None,
           "output_tokens": out, "total_tokens": prompt + (out or 0)}
    if out and first is not None and last is not None:
        rec |= {"time_to_first_token_ms": 1000 * ttft,
                "time_per_output_token_ms": 1000 * (last - start) / out,
                "inter_token_latency_ms": 1000 * (last - first) / (out - 1),
                "tokens_per_second": (prompt + out) / latency,
                "output_tokens_per_second": out / latency,
                "time_to_first_output_token_ms": 1000 * ttft,
                "iter_tokens_per_iteration": 1.0, "output_tokens_per_iteration": 1.0}
    return rec


def guidellm_benchmark(index: int, strategy: dict, starts: list[float], rng: random.Random) -> dict:
    ok, errored, incomplete = [], [], []
    for i, (targeted, start) in enumerate(
            zip(starts, [s + rng.uniform(0.0005, 0.002) for s in starts], strict=True)):
        rid = f"5c9b2f6e-1d4a-4f0e-9a51-{index:04d}{i:08d}"
        ttft = rng.uniform(0.031, 0.052)
        gaps = [rng.uniform(0.0098, 0.0121) for _ in range(31)]
        if i == len(starts) - 1:
            incomplete.append(guidellm_request(rid, targeted, start, ttft, gaps, 256,
                                               status="cancelled"))
        elif i == 2:
            errored.append(guidellm_request(
                rid, targeted, start, ttft, gaps, 256, status="errored",
                error="HTTPStatusError: Server error '503 Service Unavailable' for url "
                      "'http://localhost:8000/v1/completions'"))
        else:
            ok.append(guidellm_request(rid, targeted, start, ttft, gaps, 256))
    t0, t1 = starts[0], max(r["request_end_time"] for r in ok)

    def field(key: str) -> list[float]:
        return [r[key] for r in ok]

    n = len(ok) + len(errored) + len(incomplete)
    metrics = {
        "request_totals": {"successful": len(ok), "incomplete": len(incomplete),
                           "errored": len(errored), "total": n + 3},  # 3 not kept (sample_size)
        "requests_per_second": status_dist([len(ok) / (t1 - t0)] * 3),
        "request_concurrency": status_dist([1.0, 1.0, 2.0] if index else [1.0, 1.0, 1.0]),
        "request_latency": status_dist(field("request_latency")),
        "request_streaming_iterations_count": status_dist([34.0] * len(ok)),
        "prompt_token_count": status_dist(field("prompt_tokens")),
        "output_token_count": status_dist(field("output_tokens")),
        "total_token_count": status_dist(field("total_tokens")),
        "time_to_first_token_ms": status_dist(field("time_to_first_token_ms")),
        "time_to_first_output_token_ms": status_dist(field("time_to_first_output_token_ms")),
        "time_per_output_token_ms": status_dist(field("time_per_output_token_ms")),
        "inter_token_latency_ms": status_dist(field("inter_token_latency_ms")),
        "prompt_tokens_per_second": status_dist([256 * len(ok) / (t1 - t0)] * 3),
        "output_tokens_per_second": status_dist([32 * len(ok) / (t1 - t0)] * 3),
        "tokens_per_second": status_dist([288 * len(ok) / (t1 - t0)] * 3),
        "output_tokens_per_iteration": status_dist([1.0] * len(ok)),
        "iter_tokens_per_iteration": status_dist([1.0] * len(ok)),
    }
    sched = {"start_time": t0 - 3.1, "request_start_time": t0 - 0.01, "measure_start_time": t0,
             "measure_end_time": t1, "request_end_time": t1 + 0.01, "end_time": t1 + 0.2,
             "requests_made": {"successful": len(ok), "incomplete": len(incomplete),
                               "errored": len(errored), "total": n},
             "queued_time_avg": 0.0021, "resolve_start_delay_avg": 0.0004,
             "resolve_targeted_start_delay_avg": 0.0011, "request_start_delay_avg": 0.0002,
             "request_targeted_start_delay_avg": 0.0013, "request_time_avg": 0.39,
             "resolve_end_delay_avg": 0.0001, "resolve_time_avg": 0.3903,
             "finalized_delay_avg": 0.0009, "processed_delay_avg": 0.0012}
    return {"type_": "generative_benchmark",
            "config": {"id_": f"0b8f6a3e-7c1d-4e2a-8f5b-00000000000{index}", "run_id": "sweep-5d1c",
                       "run_index": index, "strategy": strategy,
                       "constraints": {"max_requests": {"max_num": n + 3}}, "sample_size": 6,
                       "warmup": {"percent": None, "value": None, "mode": "prefer_duration"},
                       "cooldown": {"percent": None, "value": None, "mode": "prefer_duration"}},
            "scheduler_state": {"node_id": 0, "num_processes": 2, "start_time": t0 - 3.1,
                                "end_time": t1 + 0.2, "end_queuing_time": t1,
                                "end_processing_time": t1 + 0.1, "created_requests": n + 3,
                                "queued_requests": 0, "pending_requests": 0,
                                "processing_requests": 0, "processed_requests": n + 3,
                                "successful_requests": len(ok) + 3, "errored_requests": len(errored),
                                "cancelled_requests": len(incomplete)},
            "scheduler_metrics": sched, "metrics": metrics,
            "requests": {"successful": ok, "incomplete": incomplete, "errored": errored,
                         "total": None},
            "start_time": t0, "end_time": t1, "duration": t1 - t0,
            "warmup_duration": 0.01, "cooldown_duration": 0.01}


def guidellm_report() -> dict:
    rng = random.Random(3)
    t = 1760431812.402913
    sync_starts, rate_starts = [], []
    for _ in range(6):
        sync_starts.append(t)
        t += 0.42
    t += 1.5
    for _ in range(6):
        rate_starts.append(t)
        t += 0.5
    return {
        "metadata": {"version": 2, "guidellm_version": "0.7.3", "python_version": "3.12.3",
                     "platform": "Linux-6.8.0-x86_64-with-glibc2.39"},
        "config": {"target": "http://localhost:8000", "profile": "sweep", "rate": [2.0],
                   "backend": "openai_http", "model": MODEL,
                   "data": ["prompt_tokens=256,output_tokens=32"]},
        "benchmarks": [
            guidellm_benchmark(0, {"type_": "synchronous", "worker_count": 1,
                                   "max_concurrency": None}, sync_starts, rng),
            guidellm_benchmark(1, {"type_": "constant", "worker_count": 2, "max_concurrency": None,
                                   "rate": 2.0, "rampup_duration": 0.0}, rate_starts, rng),
        ],
    }


def guidellm_v03() -> dict:
    """GuideLLM 0.3's report: no metadata, args / run_stats, flat request stats."""
    rng = random.Random(9)
    t0 = 1747386501.214077
    ok: list[dict[str, Any]] = []
    errored: list[dict[str, Any]] = []
    for i in range(4):
        start = t0 + i * 0.05
        ttft = rng.uniform(0.04, 0.07)
        gaps = [rng.uniform(0.011, 0.014) for _ in range(63)]
        sched = {"requested": True, "completed": i != 3, "errored": i == 3, "canceled": False,
                 "targeted_start_time": -1, "queued_time": start - 0.01,
                 "dequeued_time": start - 0.004, "scheduled_time": start - 0.003,
                 "worker_start": start - 0.001, "request_start": start,
                 "request_end": start + 0.9, "worker_end": start + 0.901, "process_id": 0}
        base: dict[str, Any] = {"request_id": f"b7e3-{i}", "request_type": "text_completions",
                "scheduler_info": sched, "prompt": "lorem " * 200, "prompt_tokens": 256,
                "start_time": start}
        if i == 3:
            errored.append(base | {"type_": "generative_text_error", "output": None,
                                   "output_tokens": 0, "end_time": start + 0.2,
                                   "first_token_time": None, "last_token_time": None,
                                   "error": "TimeoutError: request timed out after 0.2 s"})
            continue
        first = start + ttft
        last = first + sum(gaps)
        ok.append(base | {"type_": "generative_text_response", "output": " ipsum" * 64,
                          "output_tokens": 64, "end_time": last + 0.0005,
                          "first_token_time": first, "last_token_time": last,
                          "request_latency": last + 0.0005 - start,
                          "time_to_first_token_ms": 1000 * ttft,
                          "time_per_output_token_ms": 1000 * (last - start) / 64,
                          "inter_token_latency_ms": 1000 * (last - first) / 63})
    end = max(r["end_time"] for r in ok + errored)
    metrics = {"requests_per_second": status_dist([3 / (end - t0)] * 2),
               "request_concurrency": status_dist([3.2, 3.9]),
               "request_latency": status_dist([r["request_latency"] for r in ok]),
               "prompt_token_count": status_dist([256.0] * 3),
               "output_token_count": status_dist([64.0] * 3),
               "time_to_first_token_ms": status_dist([r["time_to_first_token_ms"] for r in ok]),
               "time_per_output_token_ms": status_dist([r["time_per_output_token_ms"] for r in ok]),
               "inter_token_latency_ms": status_dist([r["inter_token_latency_ms"] for r in ok]),
               "output_tokens_per_second": status_dist([192 / (end - t0)] * 2),
               "tokens_per_second": status_dist([960 / (end - t0)] * 2)}
    bench = {"type_": "generative_benchmark", "id_": "a1f0c0de-0003", "run_id": "c0ffee-03",
             "args": {"profile": {"type_": "concurrent", "streams": [4]}, "strategy_index": 0,
                      "strategy": {"type_": "concurrent", "streams": 4}, "max_number": 4,
                      "max_duration": None, "warmup_number": None, "warmup_duration": None,
                      "cooldown_number": None, "cooldown_duration": None},
             "run_stats": {"start_time": t0 - 0.5, "end_time": end + 0.1,
                           "requests_made": {"successful": 3, "incomplete": 0, "errored": 1,
                                             "total": 4}},
             "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                        "backend_target": "http://localhost:8000", "backend_model": MODEL},
             "request_loader": {"type_": "generative_request_loader", "data": "prompt_tokens=256,output_tokens=64"},
             "extras": {}, "metrics": metrics, "start_time": t0, "end_time": end,
             "request_totals": {"successful": 3, "incomplete": 0, "errored": 1, "total": 4},
             "request_samples": None,
             "requests": {"successful": ok, "incomplete": [], "errored": errored, "total": None}}
    return {"benchmarks": [bench]}


def main() -> None:
    write("vllm/vllm-0.11-detailed.json", vllm_detailed())
    write("vllm/vllm-append.jsonl", [vllm_summary_only(2.0, 64, 1.0),
                                     vllm_summary_only("inf", 64, 1.6)], lines=True)
    for new, folder in ((False, "aiperf-0.2"), (True, "aiperf-0.10")):
        records, summary = aiperf_run(new)
        write(f"aiperf/{folder}/profile_export.jsonl", records, lines=True)
        write(f"aiperf/{folder}/profile_export_aiperf.json", summary, indent=2)
    write("guidellm/benchmarks-0.7.json", guidellm_report())
    write("guidellm/benchmarks-0.3.json", guidellm_v03())


if __name__ == "__main__":
    main()
