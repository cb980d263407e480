"""One stage sent by several client processes, for loads one event loop cannot time.

Request i goes to process i % P (round robin), so each process sends every P-th request of the
plan: in a closed loop with its share of the concurrency, in an open loop at the arrivals of its
requests. Every process opens its connections and sends its warm-up requests, then waits; the
parent sets one start time t0 on the machine's monotonic clock (system-wide on Linux, so every
process's times are on the same axis) and each process measures its own lag and lateness. The
records come back merged in request order, with the pooled lag samples; the stage's duration
ends with the last request of any process.

More processes help only where one event loop is the bottleneck AND cores are free for them:
with the server on the same machine, client processes plus the server beyond the cores make
every process wait for a core in turn (`crowded_reason`: a stage note and a serve-bench warning).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from perfkit.core.errors import PerfkitError
from perfkit.workloads.serving.client.lag import loop_lag
from perfkit.workloads.serving.client.send import ClientOptions, Prompt, open_session
from perfkit.workloads.serving.client.stage import (
    StagePlan,
    StageResult,
    closed_loop,
    mean_gap_s,
    open_loop,
    planned_requests,
    scrape,
    warm_up,
)
from perfkit.workloads.serving.client.token_count import recount
from perfkit.workloads.serving.client.tokenizer import tokenizer_for
from perfkit.workloads.serving.client.url import redact_urls
from perfkit.workloads.serving.records import RequestRecord

START_GRACE_S = 0.05  # between "all ready" and t0
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Share:
    """What process `j` of `n` sends (picklable)."""

    j: int
    n: int
    opts: ClientOptions
    prompts: tuple[Prompt, ...]  # of its requests j, j + n, ... (cycled when time bounds the stage)
    concurrency: int | None
    arrivals_s: tuple[float, ...] | None
    max_concurrency: int | None
    requests: int | None
    duration_s: float | None
    warmup: int
    warm_prompts: tuple[Prompt, ...] = ()  # the warm-up prompts (empty: its own prompts)


def shares(opts: ClientOptions, plan: StagePlan, processes: int, total: int) -> list[Share]:
    """Split the plan's `total` requests (prompts drawn here) over `processes` processes."""
    out = []
    for j in range(processes):
        mine = range(j, total, processes)
        conc = None
        if plan.concurrency:
            conc = plan.concurrency // processes + (1 if j < plan.concurrency % processes else 0)
        cap = None
        if plan.max_concurrency:
            cap = max(plan.max_concurrency // processes + (1 if j < plan.max_concurrency % processes else 0), 1)
        out.append(Share(j, processes, opts, tuple(plan.prompt_for(i) for i in mine), conc,
                         tuple(plan.arrivals_s[i] for i in mine) if plan.arrivals_s is not None else None, cap,
                         len(mine) if plan.requests is not None else None, plan.duration_s,
                         plan.warmup // processes + (1 if j < plan.warmup % processes else 0),
                         _warm_prompts(plan)))
    return [s for s in out if s.prompts and (s.concurrency is None or s.concurrency > 0)]


def _warm_prompts(plan: StagePlan) -> tuple[Prompt, ...]:
    return () if plan.warmup_prompt_for is None else tuple(plan.warmup_prompt_for(i) for i in range(plan.warmup))


async def _send_share(share: Share, ready: Any, start: Any,
                      t0_value: Any) -> tuple[list[RequestRecord], list[tuple[float, float, bool]], list[float], float]:
    plan = StagePlan(prompt_for=lambda k: share.prompts[k % len(share.prompts)], concurrency=share.concurrency,
                     arrivals_s=share.arrivals_s, max_concurrency=share.max_concurrency, requests=share.requests,
                     duration_s=share.duration_s,
                     warmup_prompt_for=(lambda k: share.warm_prompts[k]) if share.warm_prompts else None)
    width = share.concurrency or share.max_concurrency or max(len(share.arrivals_s or ()), 1)
    async with open_session(share.opts, width) as session:
        if share.warmup:
            await warm_up(session, share.opts, plan, share.warmup)
        ready.put(share.j)
        start.wait()  # blocks this process's loop: nothing else runs in it before the stage
        t0 = float(t0_value.value)
        await asyncio.sleep(max(t0 - time.monotonic(), 0.0))
        async with loop_lag() as lag:
            if share.arrivals_s is not None:
                records, lateness = await open_loop(session, share.opts, plan, t0)
            else:
                records, lateness = await closed_loop(session, share.opts, plan, t0), []
            ended = time.monotonic()  # before the session closes and the results travel
    return [replace(r, index=share.j + share.n * r.index) for r in records], list(lag), lateness, ended


def _process(share: Share, ready: Any, start: Any, t0_value: Any, results: Any) -> None:
    try:
        results.put((share.j, asyncio.run(_send_share(share, ready, start, t0_value)), None))
    except BaseException as exc:  # the parent reports it; never a silent hang
        ready.put(share.j)
        results.put((share.j, None, f"{type(exc).__name__}: {exc}"[:300]))


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def local_server(url: str) -> bool:
    """The server runs on this machine (a loopback host): it needs a core of its own too."""
    host = (urlsplit(url).hostname or "").lower()
    return host == "localhost" or host == "::1" or host.startswith("127.")


def crowded_reason(processes: int, available: int, local: bool) -> str | None:
    """Why `processes` client processes make the client slower here, or None. Each process is an
    event loop that wants a core while a stage runs; with the server on the same machine, more
    busy processes than cores means every one of them waits for a core in turn, so timestamps
    are taken late (their error grows) and the server itself is slowed."""
    busy = processes + (1 if local else 0)
    if processes < 2 or busy <= available:
        return None
    who = f"{processes} client processes" + (" and the server" if local else "")
    return (f"{who} share {available} cores: each waits for a core, which delays its timestamps and "
            f"slows the server; use --processes {max(available - (1 if local else 0), 1)} or a client "
            "machine with more cores")


def run_stage_processes(opts: ClientOptions, plan: StagePlan, processes: int, total: int) -> StageResult:
    """Run the stage from `processes` client processes (spawned; each imports perfkit afresh)."""
    ctx = mp.get_context("spawn")
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    t0_value = ctx.Value("d", 0.0)
    work = shares(opts, plan, processes, total)
    procs = [ctx.Process(target=_process, args=(s, ready, start, t0_value, results), daemon=True) for s in work]
    notes: list[str] = []
    before = asyncio.run(_scrape_once(opts, plan.metrics_url, notes))
    for p in procs:
        p.start()
    try:
        for _ in procs:
            ready.get(timeout=READY_TIMEOUT_S)
        t0 = time.monotonic() + START_GRACE_S
        t0_value.value = t0
        start.set()
        got = [results.get(timeout=_stage_limit(opts, plan)) for _ in procs]
    except queue.Empty:
        raise PerfkitError(f"{redact_urls(opts.base_url)}: a client process did not finish in time; run fewer "
                           "processes or give the stage a duration") from None
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    failed = [err for _, res, err in got if err]
    if failed:
        raise PerfkitError(f"{redact_urls(opts.base_url)}: a client process failed ({failed[0]})")
    records = recount(sorted((r for _, res, _ in got if res for r in res[0]), key=lambda r: r.index),
                      tokenizer_for(opts.tokenizer))
    lag = [x for _, res, _ in got if res for x in res[1]]  # (monotonic end, lag, thread?) of every process's probes
    lateness = [x for _, res, _ in got if res for x in res[2]]
    # the stage ends when its last process's last request did, as in one process (stage.py); the
    # time the processes took to close their sessions and send their records back is not in it
    duration = max(res[3] for _, res, _ in got if res) - t0
    after = asyncio.run(_scrape_once(opts, plan.metrics_url, notes))
    notes.append(f"sent from {len(procs)} client processes")
    crowded = crowded_reason(len(procs), cores(), local_server(opts.base_url))
    if crowded:
        notes.append(crowded)
    return StageResult(records, duration, [x for _, x, _ in lag], lateness, t0, before, after, notes,
                       mean_gap_s(plan.arrivals_s), planned=planned_requests(plan),
                       lag_times_s=[t - t0 for t, _, _ in lag], lag_on_thread=[k for _, _, k in lag])


def _stage_limit(opts: ClientOptions, plan: StagePlan) -> float:
    return (plan.duration_s or 0.0) + opts.request_timeout_s * 2 + READY_TIMEOUT_S


async def _scrape_once(opts: ClientOptions, url: str | None, notes: list[str]) -> str | None:
    if not url:
        return None
    async with open_session(opts, 1) as session:
        return await scrape(session, url, notes)
