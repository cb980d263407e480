"""A serving spec's stage parameters -> what the load client does (StagePlan), its SLO and price."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from typing import Any

from perfkit.core.errors import SpecError
from perfkit.workloads.base import WorkloadSpec
from perfkit.workloads.serving.client.arrivals import Arrival, gamma_arrivals, read_replay
from perfkit.workloads.serving.client.hash_prompts import hash_prompt, warmup_prompt
from perfkit.workloads.serving.client.lora import Assigner
from perfkit.workloads.serving.client.lora_check import lora_format
from perfkit.workloads.serving.client.plan_size import DEFAULT_REQUESTS, DURATION_PROMPTS
from perfkit.workloads.serving.client.profile_window import WindowPlan
from perfkit.workloads.serving.client.prompts import (
    Lengths,
    read_sharegpt,
    shared_prefix,
    synthetic,
)
from perfkit.workloads.serving.client.send import Prompt
from perfkit.workloads.serving.client.session_file import read_sessions
from perfkit.workloads.serving.client.sessions import (
    Session,
    ThinkTime,
    synthetic_sessions,
    total_turns,
)
from perfkit.workloads.serving.client.stage import StagePlan
from perfkit.workloads.serving.client.tokenizer import tokenizer_for
from perfkit.workloads.serving.measurements.cost import Price, load_prices
from perfkit.workloads.serving.measurements.goodput import Slo
from perfkit.workloads.serving.spec import LengthSpec, ServingSpec, ThinkSpec

DEFAULT_OUTPUT_LEN = 128
MAX_OPEN_LOOP_REQUESTS = 1_000_000


def lengths(spec: LengthSpec | None, default: int) -> Lengths:
    if spec is None:
        return Lengths(value=default)
    return Lengths(dist=spec.dist, value=spec.value or default, low=spec.min or 1, high=spec.max or 1,
                   mean=spec.mean or 0.0, std=spec.std or 0.0)


def prompts_for(spec: ServingSpec, n: int, seed: int) -> list[Prompt]:
    p = spec.prompts
    out_len = lengths(p.output_len, DEFAULT_OUTPUT_LEN)
    if p.source == "sharegpt":
        assert p.path is not None
        fixed = p.output_len.value if p.output_len is not None and p.output_len.dist == "fixed" else None
        return read_sharegpt(p.path, n, seed, fixed)
    if p.source == "shared_prefix":
        return shared_prefix(n, p.groups, p.prefix_len, lengths(p.input_len, 128), out_len, seed, p.token_ids,
                             p.vocab_size)
    return synthetic(n, lengths(p.input_len, 128), out_len, seed, p.token_ids, p.vocab_size)


def think_of(t: ThinkSpec) -> ThinkTime:
    if t.dist == "exponential":
        return ThinkTime("exponential", t.mean or 0.0)
    if t.dist == "uniform":
        return ThinkTime("uniform", low_s=t.min or 0.0, high_s=t.max or 0.0)
    return ThinkTime("fixed", t.value or 0.0)


def sessions_of(spec: ServingSpec, seed: int) -> list[Session]:
    """The spec's multi-turn sessions: read from its session file, or synthetic."""
    s = spec.sessions
    assert s is not None
    out_len, think = lengths(spec.prompts.output_len, DEFAULT_OUTPUT_LEN), think_of(s.think_time_s)
    if s.file is not None:
        return read_sessions(s.file, out_len, think, seed)
    assert s.count is not None
    return synthetic_sessions(s.count, s.turns, lengths(spec.prompts.input_len, 128), out_len, think, seed)


def stage_plan(spec: ServingSpec, params: dict[str, Any], seed: int) -> StagePlan:
    """What the load client does in the stage `params` names; with `lora`, each request (each
    session) names its adapter (client/lora.py)."""
    plan = _stage_plan(spec, params, seed)
    return plan if spec.lora is None else with_adapters(plan, Assigner(spec.lora.adapters, spec.lora.weights, seed))


def with_adapters(plan: StagePlan, adapter_of: Callable[[int], str]) -> StagePlan:
    """`plan` with request i's prompt (session i's turns) naming adapter_of(i)."""
    base = plan.prompt_for
    sessions = None if plan.sessions is None else tuple(
        dataclasses.replace(s, adapter=adapter_of(i)) for i, s in enumerate(plan.sessions))
    return dataclasses.replace(plan, prompt_for=lambda i: dataclasses.replace(base(i), adapter=adapter_of(i)),
                               sessions=sessions)


def _stage_plan(spec: ServingSpec, params: dict[str, Any], seed: int) -> StagePlan:
    requests = params.get("requests", spec.requests)
    duration = params.get("duration_s", spec.duration_s)
    if requests is None and duration is None:
        requests = DEFAULT_REQUESTS
    metrics_url = None if spec.metrics_url == "none" else (
        f"{spec.endpoint}/metrics" if spec.metrics_url == "auto" else spec.metrics_url)
    width = int(params.get("concurrency") or params.get("max_concurrency") or spec.load.max_concurrency or 1)
    warmup = spec.warmup if spec.warmup is not None else min(width, 64)
    common: dict[str, Any] = {"warmup": warmup, "metrics_url": metrics_url, "duration_s": duration,
                              "window": window_plan(spec)}
    if spec.sessions is not None:
        sessions = sessions_of(spec, seed)
        warm = synthetic(max(warmup, 1), lengths(spec.prompts.input_len, 128),  # not the sessions' words
                         lengths(spec.prompts.output_len, DEFAULT_OUTPUT_LEN), seed + 1)
        return StagePlan(prompt_for=lambda i: warm[i % len(warm)], concurrency=int(params["concurrency"]),
                         requests=total_turns(sessions), sessions=tuple(sessions), **common)
    if "replay" in params:
        arrivals = read_replay(params["replay"], spec.load.replay_block_size)
        if arrivals[0].hash_ids is not None:
            return trace_plan(spec, arrivals, seed, common)
        base = prompts_for(spec, len(arrivals), seed)
        plist = [Prompt(b.text, a.input_tokens or b.input_tokens, a.output_tokens or b.output_tokens)
                 for a, b in zip(arrivals, base, strict=True)]
        return StagePlan(prompt_for=lambda i: plist[i % len(plist)],
                         arrivals_s=tuple(a.time_s / spec.load.replay_speed for a in arrivals), **common)
    if "concurrency" in params:
        plist = prompts_for(spec, requests or DURATION_PROMPTS, seed)
        return StagePlan(prompt_for=lambda i: plist[i % len(plist)], concurrency=int(params["concurrency"]),
                         requests=requests, **common)
    rate = float(params["rate"])
    if requests is None:
        if math.isinf(rate):
            raise SpecError(f"{spec.label}: rate .inf with duration_s only sends without end; give requests")
        assert duration is not None  # one of the two is set (above)
        requests = min(math.ceil(rate * float(duration) * 1.5) + 16, MAX_OPEN_LOOP_REQUESTS)
    plist = prompts_for(spec, requests, seed)
    burst = float(params.get("burstiness", spec.load.burstiness))
    return StagePlan(prompt_for=lambda i: plist[i % len(plist)],
                     arrivals_s=tuple(gamma_arrivals(rate, requests, burst, seed)),
                     max_concurrency=params.get("max_concurrency", spec.load.max_concurrency), **common)


def trace_plan(spec: ServingSpec, arrivals: list[Arrival], seed: int, common: dict[str, Any]) -> StagePlan:
    """Open loop at a Mooncake trace's arrivals (scaled by --replay-speed), each prompt made of its
    hash ids' blocks (client/hash_prompts.py); warm-up prompts share no block with them."""
    p, block, speed = spec.prompts, spec.load.replay_block_size, spec.load.replay_speed
    warm = warmup_prompt(lengths(p.input_len, 128).value, p.token_ids)
    return StagePlan(prompt_for=lambda i: hash_prompt(arrivals[i % len(arrivals)], block, seed, p.token_ids,
                                                      p.vocab_size),
                     arrivals_s=tuple(a.time_s / speed for a in arrivals), warmup_prompt_for=lambda i: warm,
                     **common)


def slo_of(spec: ServingSpec) -> Slo | None:
    s = spec.slo
    if s is None:
        return None
    return Slo(ttft_s=s.ttft_s, tpot_s=s.tpot_s, e2e_s=s.e2e_s, quantile=s.quantile)


def price_of(spec: ServingSpec) -> Price | None:
    p = spec.price
    if p is None or (p.usd_per_gpu_hour is None and p.file is None):  # none, or an energy price only
        return None
    if p.file is not None:
        prices = load_prices(p.file)
        if p.name not in prices:
            names = ", ".join(sorted(prices)[:20])
            raise SpecError(f"{p.file}: no price named '{p.name}'; use one of: {names}")
        found = prices[p.name]
        return Price(found.usd_per_gpu_hour, p.gpus, found.source)
    assert p.usd_per_gpu_hour is not None
    return Price(p.usd_per_gpu_hour, p.gpus, p.source)


def auth_headers(spec: ServingSpec) -> dict[str, str]:
    """`Authorization: Bearer TOKEN` from the variable `client.api_key_env` names (the token is
    never in the spec, the run or a message); SpecError when it is unset, empty or not one line."""
    var = spec.client.api_key_env
    if var is None:
        return {}
    token = os.environ.get(var, "")
    if not token:
        raise SpecError(f"--api-key-env {var}: the variable is not set or empty; export {var}=TOKEN")
    if not all(0x20 < ord(c) < 0x7F for c in token):
        raise SpecError(f"--api-key-env {var}: the token holds a space, a control or a non-ASCII character")
    return {"Authorization": f"Bearer {token}"}


def window_plan(spec: ServingSpec) -> WindowPlan | None:
    """The profiling window each stage opens (profile.server_trace), or None."""
    if spec.profile is None:
        return None
    t = spec.profile.server_trace
    return WindowPlan(server=t.server, steps=t.steps, seconds=t.seconds, trace_dir=t.trace_dir)


def preflight(spec: WorkloadSpec) -> None:
    """Read every file the spec names (prices, dataset, replay, tokenizer) before anything is measured: a bad
    one is a located one-line error now, not a failed stage later. With `lora`, ask the server
    whether it serves each adapter (client/lora_check.py): one it does not is refused now."""
    assert isinstance(spec, ServingSpec)
    auth_headers(spec)
    price_of(spec)
    tokenizer_for(spec.client.tokenizer)  # on this machine, or a one-line error naming --tokenizer
    if spec.prompts.source == "sharegpt":
        prompts_for(spec, 1, 0)
    if spec.load.replay is not None:
        read_replay(spec.load.replay, spec.load.replay_block_size)
    if spec.sessions is not None and spec.sessions.file is not None:
        sessions_of(spec, 0)
    if spec.lora is not None and spec.endpoint is not None:  # the server serves every adapter asked
        lora_format(spec.endpoint, spec.lora.adapters, spec.lora.format, auth_headers(spec))
