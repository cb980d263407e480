"""Serving run records built by hand (no server, no load client): the stages of one serving
workload at rising concurrency with the metrics `kind: serving` records, an optional
client-bound stage and a `front` point, and hostile user strings where a test asks for them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from perfkit.core.env import Env, GitState
from perfkit.core.record import PointResult, Run

WORKLOAD = "chat"
EVIL_ENDPOINT = 'http://evil.example/<script>alert("x")</script>'
EVIL_CLIENT_BOUND = "client-bound: loop lag p99 9 ms [x](http://evil) \x1b[31mred\x1b[0m <script>"
EVIL_NOTE = "<script>alert(1)</script> [x](http://evil) \x1b[31m|pipe|"


def stage_metrics(concurrency: int, speed: float = 1.0, *, client_bound: str | None = None,
                  endpoint: str = "http://127.0.0.1:8000", notes: tuple[str, ...] = (),
                  failed: int = 0, chunk_gaps: bool = False) -> dict[str, Any]:
    """A stage's metrics: TTFT and TPOT grow with the load, throughput grows sublinearly;
    `speed` > 1 is a faster server (lower latencies, more tok/s)."""
    ttft = 0.05 * (1 + 0.2 * concurrency) / speed
    tpot = 0.01 * (1 + 0.1 * concurrency) / speed
    out_tps = concurrency / tpot
    m: dict[str, Any] = {
        "ttft_p50_s": ttft, "ttft_p90_s": ttft * 1.5, "ttft_p99_s": ttft * 2.0, "ttft_sched_p50_s": ttft,
        "tpot_p50_s": tpot, "tpot_p99_s": tpot * 1.4,
        "e2e_p50_s": ttft + 127 * tpot, "e2e_p99_s": 1.3 * (ttft + 127 * tpot),
        "request_per_s": out_tps / 128, "output_tok_per_s": out_tps, "input_tok_per_s": 4 * out_tps,
        "total_tok_per_s": 5 * out_tps, "interactivity_tok_per_s": 1 / tpot,
        "goodput_req_per_s": out_tps / 128 * 0.9, "goodput_tok_per_s": out_tps * 0.9, "slo_attainment": 0.9,
        "usd_per_1m_output_tok": 2.0 * 1e6 / 3600 / out_tps, "usd_per_1m_input_tok": 0.1,
        "usd_per_1m_total_tok": 0.2, "steady_start_s": 1.0, "steady_end_s": 20.0,
        "steady_output_tok_per_s": out_tps, "requests_ok": 64 - failed, "requests_failed": failed,
        "endpoint": endpoint, "server_metrics": {"vllm:num_preemptions_total": 3.0,
                                                 "vllm:prompt_tokens_total": 8192.0},
        "request_samples": {"ttft_s": [ttft, ttft * 1.1]}, "requests_file": f"serving/c{concurrency}.jsonl",
        "timing_skipped": "serving stage: measured request by request by the load client",
    }
    if chunk_gaps:
        m.update(token_source="chunks (no usage per chunk)", chunk_gap_p50_s=tpot, chunk_gap_p99_s=tpot * 3)
    else:
        m.update(token_source="usage", token_itl_p50_s=tpot, token_itl_p99_s=tpot * 2)
    if failed:
        m["failures"] = {"HTTP 503": failed}
    if client_bound:
        m["client_bound"] = client_bound
    if notes:
        m["serving_notes"] = list(notes)
    return m


def stage_point(concurrency: int, metrics: dict[str, Any], workload: str = WORKLOAD) -> PointResult:
    return PointResult(key=f"serving/{workload}/concurrency={concurrency}", kind="serving", workload=workload,
                       params={"concurrency": concurrency}, status="ok", metrics=metrics)


def front_point(workload: str = WORKLOAD) -> PointResult:
    metrics = {"front_stages": ["concurrency=1", "concurrency=4"],
               "usd_per_1m_output_tok_at_20_tok_per_user": 1.5, "throughput_per_gpu_at_20_tok_per_user": 350.0,
               "usd_per_1m_output_tok_at_50_tok_per_user": 4.25, "throughput_per_gpu_at_50_tok_per_user": 120.0,
               "timing_skipped": "serving stage: measured request by request by the load client"}
    return PointResult(key=f"serving/{workload}/front=interactivity", kind="serving", workload=workload,
                       params={"front": "interactivity"}, status="ok", metrics=metrics)


def serving_run(run_id: str = "srv1", commit: str = "c0ffee1234567890", speed: float = 1.0, *,
                hostile: bool = False, created: str = "2026-01-01T00:00:00+00:00",
                workload: str = WORKLOAD, levels: tuple[int, ...] = (1, 4, 16)) -> Run:
    """Stages at `levels` concurrency and a front point; with `hostile`, the last stage is
    client-bound and the endpoint, the client-bound line and a note carry markup, a Markdown
    link and a terminal escape; the middle stage lost requests and has chunk gaps only."""
    endpoint = EVIL_ENDPOINT if hostile else "http://127.0.0.1:8000"
    points = []
    for i, c in enumerate(levels):
        last = i == len(levels) - 1
        metrics = stage_metrics(c, speed, endpoint=endpoint,
                                client_bound=(EVIL_CLIENT_BOUND if hostile else "client-bound: loop lag p99 9 ms")
                                if last else None,
                                notes=(EVIL_NOTE,) if hostile and last else (),
                                failed=2 if i == 1 else 0, chunk_gaps=hostile and i == 1)
        points.append(stage_point(c, metrics, workload))
    points.append(front_point(workload))
    return Run(run_id=run_id, created=created, status="complete", spec={"name": f"serve-{workload}"},
               spec_hash="serve", spec_path="serve.yaml", device="cuda",
               env=Env(git=GitState(commit=commit, branch="main")), points=tuple(points))


def sweep_run(run_id: str, sweep: str | None, config: str, speed: float, *, repeat: int = 1,
              created: str = "2026-01-05T00:00:00+00:00", gpus: int | None = None) -> Run:
    """One run of a server sweep (`perfkit serve-sweep`): serving_run's stages, each naming the start
    that served it (`server_launch`: configuration, command, start-up time, version, repeat, sweep
    id; no id when `sweep` is None, as runs stored before sweeps had ids); with `gpus`, a price per
    GPU-hour for that many GPUs in the spec."""
    run = serving_run(run_id, speed=speed, created=created)
    launch: dict[str, Any] = {"config": config, "command": f"serve --cfg {config}", "endpoint": "http://127.0.0.1:9",
                              "start_time_s": 2.5 * speed, "version": "v1 <b>", "repeat": repeat}
    if sweep is not None:
        launch["sweep"] = sweep
    points = tuple(replace(p, metrics={**p.metrics, "server_launch": launch}) if "concurrency" in p.params else p
                   for p in run.points)
    spec: dict[str, Any] = {"name": "sw", "workloads": [{"kind": "serving", "name": WORKLOAD}]}
    if gpus is not None:
        spec["workloads"][0]["price"] = {"usd_per_gpu_hour": 2.0, "gpus": gpus}
    return replace(run, points=points, spec=spec)
