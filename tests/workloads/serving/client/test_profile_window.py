"""The window client against servers that answer as vLLM's and SGLang's docs say, and against a
real perfkit serve (in this process): bodies sent, errors named, trace files found."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from pathlib import Path

import aiohttp
import pytest

from perfkit.workloads.serving.client.profile_window import (
    WindowPlan,
    WindowResult,
    detect_server,
    run_window,
    start_body,
)
from tests.helpers.profiler_servers import Seen, serving, sglang_app, vllm_app


async def _window(url: str, plan: WindowPlan, stage_s: float = 2.0) -> WindowResult:
    done = asyncio.Event()
    async with aiohttp.ClientSession() as session:
        task = asyncio.create_task(run_window(session, url, plan, asyncio.get_running_loop().time(),
                                              asyncio.sleep(0.05), done))
        await asyncio.wait([task], timeout=stage_s)
        done.set()
        return await task


def test_start_bodies_follow_each_server() -> None:
    assert start_body("vllm", None) is None
    assert start_body("perfkit", None) is None
    assert start_body("perfkit", 8) == {"num_steps": 8}
    assert start_body("sglang", 4) == {"num_steps": 4, "activities": ["CPU", "GPU"]}


def test_vllm_seconds_window_finds_its_trace(tmp_path: Path) -> None:
    seen = Seen()

    async def run() -> tuple[WindowResult, tuple[str, str | None]]:
        async with serving(vllm_app(tmp_path, seen)) as url:
            async with aiohttp.ClientSession() as session:
                kind = await detect_server(session, url)
            return await _window(url, WindowPlan(server="auto", seconds=0.2, trace_dir=str(tmp_path))), kind

    result, kind = asyncio.run(run())
    assert kind == ("vllm", None)
    assert seen.bodies == [None]  # vLLM's /start_profile takes no body
    assert result.notes == [] and result.server == "vllm"
    assert [re.fullmatch(r".+_\d+\.\d+\.pt\.trace\.json\.gz", f.name) is not None for f in result.files] == [True]
    assert result.start_s is not None and result.end_s is not None and result.end_s - result.start_s >= 0.2


def test_vllm_without_a_profiler_dir_is_named_with_the_fix(tmp_path: Path) -> None:
    async def run() -> WindowResult:
        async with serving(vllm_app(None, Seen())) as url:
            return await _window(url, WindowPlan(server="vllm", seconds=0.1, trace_dir=str(tmp_path)))

    result = asyncio.run(run())
    assert result.start_s is None and result.files == []
    assert "HTTP 404" in result.notes[0] and "VLLM_TORCH_PROFILER_DIR" in result.notes[0]


def test_vllm_refuses_a_step_count(tmp_path: Path) -> None:
    async def run() -> WindowResult:
        async with serving(vllm_app(tmp_path, Seen())) as url:
            return await _window(url, WindowPlan(server="vllm", steps=4, trace_dir=str(tmp_path)))

    assert "takes no step count" in asyncio.run(run()).notes[0]


@pytest.mark.parametrize("plan", [WindowPlan(server="auto", steps=5), WindowPlan(server="sglang", seconds=0.2)])
def test_sglang_window_waits_for_the_trace_it_writes_after(tmp_path: Path, plan: WindowPlan) -> None:
    seen = Seen()
    plan = WindowPlan(server=plan.server, steps=plan.steps, seconds=plan.seconds, trace_dir=str(tmp_path))

    async def run() -> WindowResult:
        async with serving(sglang_app(tmp_path, seen)) as url:
            return await _window(url, plan)

    result = asyncio.run(run())
    assert result.server == "sglang" and result.notes == []
    assert [f.name.endswith("-TP-0.trace.json.gz") for f in result.files] == [True]
    body = seen.bodies[0]
    assert body["activities"] == ["CPU", "GPU"]
    assert body.get("num_steps") == plan.steps


def test_remote_server_without_a_trace_dir_says_how_to_attach(tmp_path: Path) -> None:
    async def run() -> WindowResult:
        async with serving(vllm_app(tmp_path, Seen())) as url:  # its directory is not named here
            return await _window(url, WindowPlan(server="vllm", seconds=0.05))

    result = asyncio.run(run())
    assert result.files == [] and "serve-bench attach" in result.notes[-1]


@pytest.mark.slow
def test_perfkit_serve_window_of_steps_writes_named_step_ranges(tmp_path: Path) -> None:
    from perfkit.workloads.serving.server.options import ModelOptions, ServeOptions
    from tests.helpers.serving_server import post, served

    options = ServeOptions(mode=ModelOptions(max_batch=4, cache_len=256, profile_dir=str(tmp_path)))

    async def run() -> WindowResult:
        async with served(options) as url:
            load = [asyncio.create_task(post(url, "/v1/completions",
                                             {"prompt": [1, 2, 3], "max_tokens": 40, "stream": True}))
                    for _ in range(3)]
            result = await _window(url, WindowPlan(server="auto", steps=6), stage_s=30)
            await asyncio.gather(*load)
            return result

    result = asyncio.run(run())
    assert result.server == "perfkit" and result.trace_dir == str(tmp_path), result.notes
    assert len(result.files) == 1 and result.files[0].name.endswith(".pt.trace.json.gz")
    events = json.loads(gzip.decompress(result.files[0].read_bytes()))["traceEvents"]
    steps = [e["name"] for e in events if str(e.get("name", "")).startswith("perfkit_step#")]
    assert len(steps) == 6
    assert all(re.fullmatch(r"perfkit_step#\d+ (prefill|decode|mixed) bs=\d+ tokens=\d+", s) for s in steps)
    assert any(e.get("name") == "perfkit_attention" for e in events)
