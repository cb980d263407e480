"""Run one load stage against a server: warm-up requests, then closed-loop concurrency or
open-loop arrivals, with the client's own loop lag and send lateness measured throughout.

Closed loop (`concurrency` K): K requests in flight; each finished request is followed at once
by the next; a request is due when its slot frees. Open loop (`arrivals`): request i is due at
its arrival time; with `max_concurrency` it also waits for a free slot, and that wait is client
queueing (TTFT and E2E "from schedule" include it; the plain ones start at the send). Send
lateness (open loop): when the scheduler woke for an arrival minus the arrival time.
With a profiling `window`, the server's profiler is opened once the stage's load is steady (a
quarter of its requests sent, and at least as many as it keeps in flight; or a quarter of its
duration) and closed after the window's steps or seconds (profile_window.py).
Sessions (`sessions`, with `concurrency` sessions at once): multi-turn conversations, each turn
sent a think time after the previous answer (session_loop.py); `requests` is their turns.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from perfkit.workloads.serving.client.lag import loop_lag
from perfkit.workloads.serving.client.profile_window import WindowPlan, WindowResult, run_window
from perfkit.workloads.serving.client.send import ClientOptions, Prompt, open_session, send
from perfkit.workloads.serving.client.session_loop import run_sessions
from perfkit.workloads.serving.client.sessions import Session
from perfkit.workloads.serving.client.token_count import recount
from perfkit.workloads.serving.client.tokenizer import tokenizer_for
from perfkit.workloads.serving.client.url import redact_urls
from perfkit.workloads.serving.records import RequestRecord
from perfkit.workloads.serving.telemetry.stage_series import MAX_SAMPLES, SAMPLE_INTERVAL_S

METRICS_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class StagePlan:
    prompt_for: Callable[[int], Prompt]  # the prompt of request i
    concurrency: int | None = None  # closed loop with this many in flight
    arrivals_s: tuple[float, ...] | None = None  # open loop: arrival times
    max_concurrency: int | None = None  # open loop: at most this many in flight
    requests: int | None = None  # stop after this many (closed loop; open loop: len(arrivals_s))
    duration_s: float | None = None  # stop starting requests after this long
    warmup: int = 0  # requests sent at once (and awaited) before the stage, not recorded: they open
    # the pool's connections, so no measured request pays for a TCP connect
    metrics_url: str | None = None  # Prometheus /metrics, scraped before and after
    window: WindowPlan | None = None  # a profiling window inside the stage
    sessions: tuple[Session, ...] | None = None  # multi-turn sessions, `concurrency` at once
    warmup_prompt_for: Callable[[int], Prompt] | None = None  # the warm-up prompts (None: prompt_for's)


@dataclass
class StageResult:
    records: list[RequestRecord]
    duration_s: float  # t0 to the end of the last request
    lag_s: list[float]
    lateness_s: list[float] = field(default_factory=list)
    t0_monotonic_s: float = 0.0  # the client's time.monotonic() at t0 (to place server stamps)
    metrics_before: str | None = None
    metrics_after: str | None = None
    notes: list[str] = field(default_factory=list)
    mean_interarrival_s: float | None = None  # open loop: the plan's mean gap between arrivals
    window: WindowResult | None = None  # the profiling window, when the plan asked for one
    # (seconds from t0, /metrics text) scraped during the stage (telemetry/stage_series.py)
    metrics_samples: list[tuple[float, str]] = field(default_factory=list)
    planned: int | None = None  # requests the plan would send (None: a time bound decides)
    lag_times_s: list[float] = field(default_factory=list)  # when each lag sample ended, from t0
    lag_on_thread: list[bool] = field(default_factory=list)  # each lag sample: the thread probe's (else the loop's)


class Progress:
    """Requests sent so far; `reached` is set once `threshold` were."""

    def __init__(self, threshold: int) -> None:
        self.sent, self.threshold = 0, threshold
        self.reached = asyncio.Event()

    def one(self) -> None:
        self.sent += 1
        if self.sent >= self.threshold:
            self.reached.set()


def open_threshold(plan: StagePlan, width: int) -> int:
    """Requests sent before a window opens: a quarter of the stage, at least its width."""
    total = plan.requests if plan.requests is not None else len(plan.arrivals_s or ())
    return max(width, -(-total // 4)) if total else width


async def _steady(progress: Progress, plan: StagePlan) -> None:
    waits: list[asyncio.Task[object]] = [asyncio.create_task(progress.reached.wait())]
    if plan.duration_s is not None:
        waits.append(asyncio.create_task(asyncio.sleep(plan.duration_s / 4)))
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def sample_metrics(session: aiohttp.ClientSession, url: str | None, t0: float, done: asyncio.Event,
                         out: list[tuple[float, str]]) -> None:
    """Scrape `url` every SAMPLE_INTERVAL_S until `done` (text only: parsed after the stage)."""
    if not url:
        return
    ignored: list[str] = []  # the scrapes before and after the stage say what failed
    while not done.is_set() and len(out) < MAX_SAMPLES:
        text = await scrape(session, url, ignored)
        if text is None:
            return
        out.append((time.monotonic() - t0, text))
        try:
            await asyncio.wait_for(done.wait(), SAMPLE_INTERVAL_S)
        except asyncio.TimeoutError:
            pass


async def scrape(session: aiohttp.ClientSession, url: str | None, notes: list[str]) -> str | None:
    """The text of a Prometheus endpoint, or None with a note (never fails the stage)."""
    if not url:
        return None
    shown = redact_urls(url)
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=METRICS_TIMEOUT_S)) as resp:
            if resp.status != 200:
                notes.append(f"{shown}: HTTP {resp.status}; server metrics left out")
                return None
            return (await resp.content.read(16 * 1024 * 1024)).decode("utf-8", "replace")
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        notes.append(f"{shown}: {type(exc).__name__}; server metrics left out")
        return None


def planned_requests(plan: StagePlan) -> int | None:
    """The requests the plan sends: its count or its arrivals; None when its duration bounds it."""
    if plan.duration_s is not None:
        return None
    return plan.requests if plan.arrivals_s is None else len(plan.arrivals_s)


def mean_gap_s(arrivals_s: tuple[float, ...] | None) -> float | None:
    """The mean time between an open-loop plan's arrivals (None: closed loop or one arrival)."""
    if arrivals_s is None or len(arrivals_s) < 2:
        return None
    return (arrivals_s[-1] - arrivals_s[0]) / (len(arrivals_s) - 1)


async def warm_up(session: aiohttp.ClientSession, opts: ClientOptions, plan: StagePlan, n: int) -> list[RequestRecord]:
    """`n` requests sent at once and awaited, not recorded: they open the pool's connections."""
    t_w = time.monotonic()
    prompt_for = plan.warmup_prompt_for or plan.prompt_for
    return list(await asyncio.gather(*(send(session, opts, -1, 0.0, prompt_for(i), t_w) for i in range(n))))


async def run_stage(opts: ClientOptions, plan: StagePlan) -> StageResult:
    width = plan.concurrency or plan.max_concurrency or max(len(plan.arrivals_s or ()), 1)
    notes: list[str] = []
    async with open_session(opts, min(width, 10_000)) as session:
        if plan.warmup:
            warm = await warm_up(session, opts, plan, plan.warmup)
            failed = sum(1 for r in warm if r.error)
            if failed:
                notes.append(f"{failed} of {plan.warmup} warm-up requests failed ({warm[0].error or ''})")
        before = await scrape(session, plan.metrics_url, notes)
        progress = Progress(open_threshold(plan, width))
        done = asyncio.Event()
        window_task = None
        samples: list[tuple[float, str]] = []
        async with loop_lag() as lag:
            t0 = time.monotonic()
            sampler = asyncio.create_task(sample_metrics(session, plan.metrics_url, t0, done, samples))
            if plan.window is not None:
                window_task = asyncio.create_task(
                    run_window(session, opts.base_url, plan.window, t0, _steady(progress, plan), done))
            lateness: list[float] = []
            if plan.sessions is not None:
                records = await run_sessions(session, opts, plan.sessions, width, t0, plan.duration_s, progress.one)
            elif plan.arrivals_s is not None:
                records, lateness = await open_loop(session, opts, plan, t0, progress)
            else:
                records, lateness = await closed_loop(session, opts, plan, t0, progress), []
            duration = time.monotonic() - t0
            done.set()
        await sampler
        window = await window_task if window_task is not None else None
        after = await scrape(session, plan.metrics_url, notes)
    records = recount(sorted(records, key=lambda r: r.index), tokenizer_for(opts.tokenizer))
    taken = list(lag)
    return StageResult(records, duration, [x for _, x, _ in taken], lateness, t0, before, after, notes,
                       mean_gap_s(plan.arrivals_s), window, samples, planned_requests(plan),
                       lag_times_s=[t - t0 for t, _, _ in taken], lag_on_thread=[k for _, _, k in taken])


async def closed_loop(session: aiohttp.ClientSession, opts: ClientOptions, plan: StagePlan,
                       t0: float, progress: Progress | None = None) -> list[RequestRecord]:
    assert plan.concurrency
    limit = plan.requests if plan.requests is not None else 10_000_000
    counter = iter(range(limit))
    out: list[RequestRecord] = []

    async def worker() -> None:
        for i in counter:
            now = time.monotonic() - t0
            if plan.duration_s is not None and now >= plan.duration_s:
                return
            if progress is not None:
                progress.one()
            out.append(await send(session, opts, i, now, plan.prompt_for(i), t0))

    await asyncio.gather(*(worker() for _ in range(plan.concurrency)))
    return out


async def open_loop(session: aiohttp.ClientSession, opts: ClientOptions, plan: StagePlan,
                     t0: float, progress: Progress | None = None) -> tuple[list[RequestRecord], list[float]]:
    assert plan.arrivals_s is not None
    slots = asyncio.Semaphore(plan.max_concurrency) if plan.max_concurrency else None
    lateness: list[float] = []

    async def one(i: int, due: float) -> RequestRecord:
        if slots is None:
            return await send(session, opts, i, due, plan.prompt_for(i), t0)
        async with slots:
            return await send(session, opts, i, due, plan.prompt_for(i), t0)

    tasks = []
    for i, due in enumerate(plan.arrivals_s):
        if plan.duration_s is not None and due >= plan.duration_s:
            break
        wait = t0 + due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        lateness.append(max(time.monotonic() - t0 - due, 0.0))
        tasks.append(asyncio.create_task(one(i, due)))
        if progress is not None:
            progress.one()
    return list(await asyncio.gather(*tasks)), lateness
