"""The load client against `perfkit serve --synthetic` in another process, on loopback: its
numbers equal the server's own stamps (per-token ITL within 0.5 ms, TTFT from its send within 2 ms at p50)
whenever the client-bound check passes, and the ITL p50 is within its error bound from the lag
around each read always; k tokens per chunk stays exact per token where chunk gaps are k times
off; client queueing is visible (vllm#54101); against the server's stamps an idle client is not
client-bound (its measured errors under 1 ms) and a CPU-burning thread in the client is; every
fault becomes a request's error."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Iterator

import pytest

from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan, StageResult, run_stage
from perfkit.workloads.serving.measurements.client_bound import stage_verdict
from perfkit.workloads.serving.measurements.client_error import ErrorBound
from perfkit.workloads.serving.measurements.latency import chunk_gaps_s, pooled, token_itls_s
from perfkit.workloads.serving.measurements.read_error import read_error_bounds
from perfkit.workloads.serving.measurements.served_records import as_served
from perfkit.workloads.serving.measurements.summary import summarize
from perfkit.workloads.serving.records import RequestRecord
from tests.helpers.serving_server import running_server

pytestmark = pytest.mark.slow  # real servers in other processes


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    # 20 ms gaps: a number is moved materially by the client when its error passes 1 ms (and 2%),
    # which a busy test machine still avoids most of the time
    with running_server("--synthetic", "--ttft-ms", "40", "--itl-ms", "20") as url:
        yield url


def _stage(url: str, concurrency: int, requests: int, output: int = 16, vary: int = 0,
           **opts: object) -> StageResult:
    """`vary`: output lengths spread over output .. output + vary - 1 (requests fall out of step)."""
    client = ClientOptions(base_url=url, model="m", **opts)  # type: ignore[arg-type]
    plan = StagePlan(prompt_for=lambda i: Prompt("a b c d", 4, output + (i * 7) % max(vary, 1)),
                     concurrency=concurrency,
                     requests=requests, warmup=concurrency)  # every pooled connection opened
    return asyncio.run(run_stage(client, plan))


def _as_served(result: StageResult) -> list[RequestRecord]:
    return as_served(result.records, result.t0_monotonic_s)


def _p50(values: list[float]) -> float:
    return statistics.median(values)


ATTEMPTS = 3  # timing checks take the best of three stages: other tests share this machine


def _verdict(result: StageResult) -> tuple[list[ErrorBound], str | None]:
    """As serve-bench judges a stage: against the server's stamps (perfkit serve gives them)."""
    return stage_verdict(result.records, result.lag_s, result.lateness_s, result.mean_interarrival_s,
                         result.lag_times_s, result.t0_monotonic_s, result.lag_on_thread)


def _deviation(server: str, concurrency: int) -> tuple[float, float, float, float, str | None]:
    """(|ITL p50 - the server's|, |TTFT p50 - the server's from the client's send|, |ITL p50 - 20 ms|,
    |TTFT p50 - 40 ms|, client-bound reason) of one stage. TTFT is compared from the client's own
    send: the request's way into the server's handler (its intake, milliseconds on a loaded machine)
    is the server's part of the latency, which the client-bound verdict leaves out too."""
    # lengths 8-16: after the opening burst (all requests sent at once) the requests fall out of
    # step, as a server's real load does; a burst's last requests wait in the server's intake
    # before its handler stamps their arrival, which no stamp of its own can see
    result = _stage(server, concurrency, requests=max(4 * concurrency, 8), output=8, vary=9)
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    client_itl = pooled(result.records, token_itls_s)
    served = _as_served(result)
    client_ttft = [r.ttft_s for r in result.records if r.ttft_s is not None]
    sent = {r.index: r.sent_s for r in result.records}
    server_ttft = [r.token_times_s[0] - sent_s for r in served if r.token_times_s and (sent_s := sent[r.index]) is not None]
    bounds, reason = _verdict(result)
    itl_dev = abs(_p50(client_itl) - _p50(pooled(served, token_itls_s)))
    # the ITL p50's deviation is within the bound a server without stamps would get, client-bound or not
    per_read = read_error_bounds(result.records, result.lag_s, result.lag_times_s, result.lag_on_thread)
    assert itl_dev <= {b.metric: b.bound_s for b in per_read}["token_itl_p50_s"] + 1e-9, (itl_dev, per_read)
    assert {b.source for b in bounds} == {"server stamps"}
    return (itl_dev, abs(_p50(client_ttft) - _p50(server_ttft)),
            abs(_p50(client_itl) - 20e-3), abs(_p50(client_ttft) - 40e-3), reason)


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_token_itl_and_ttft_equal_the_servers_stamps(server: str, concurrency: int) -> None:
    seen = []
    for _ in range(ATTEMPTS):
        itl_dev, ttft_dev, itl_off, ttft_off, reason = _deviation(server, concurrency)
        # the server kept its own timing (20 ms ITL, 40 ms TTFT): a machine busy enough to delay
        # the server's intake by more than 5 ms is not the situation the promise is about
        kept_timing = itl_off < 2e-3 and ttft_off < 5e-3
        if reason is None and kept_timing:  # exactness is promised where the client is not the bottleneck
            seen.append((itl_dev, ttft_dev))
            if itl_dev < 0.5e-3 and ttft_dev < 2e-3:
                return
    if not seen:
        why = reason or (f"the server itself ran late (ITL p50 off 20 ms by {itl_off:.4f} s, "
                         f"TTFT p50 off 40 ms by {ttft_off:.4f} s)")
        # a server that never keeps its timing fails test_the_synthetic_server_keeps_its_timing
        pytest.skip(f"this machine was too busy in every attempt: {why}")
    raise AssertionError(f"ITL / TTFT p50 off the server's stamps by {seen} (limits 0.5 ms, 2 ms)")


def test_the_synthetic_server_keeps_its_timing(server: str) -> None:
    """The comparison above is against a server that does what it was told: one request at a time
    its ITL is 20 ms and its TTFT 40 ms (best of three stages on a shared machine)."""
    offs = []
    for _ in range(ATTEMPTS):
        _, _, itl_off, ttft_off, _ = _deviation(server, 1)
        offs.append((itl_off, ttft_off))
        if itl_off < 2e-3 and ttft_off < 5e-3:
            return
    raise AssertionError(f"the server's ITL / TTFT p50 off 20 ms / 40 ms by {offs}")


def test_tokens_per_chunk_keeps_per_token_itl_exact() -> None:
    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "5", "--tokens-per-chunk", "1,4") as url:
        result = _stage(url, 2, requests=6, output=21)
    assert all(r.ok and r.token_source == "usage" for r in result.records)
    assert {k for r in result.records for k in r.chunk_tokens} == {1, 4}
    token_p50 = _p50(pooled(result.records, token_itls_s))
    chunk_gaps = pooled(result.records, chunk_gaps_s)
    served_p50 = _p50(pooled(_as_served(result), token_itls_s))
    assert abs(token_p50 - served_p50) < 0.5e-3 and abs(token_p50 - 5e-3) < 1e-3
    # counting chunks as tokens is off by the chunk factor: gaps of 4-token chunks are ~4 x ITL
    assert max(chunk_gaps) > 3.5 * token_p50


def test_client_queueing_is_shown_as_in_vllm_54101() -> None:
    """Concurrency 1 and 10 requests/s offered to a 500 ms service: from the send every request
    looks fast; from its scheduled arrival, the queue behind the client's own semaphore shows."""
    with running_server("--synthetic", "--ttft-ms", "100", "--itl-ms", "20") as url:
        client = ClientOptions(base_url=url, model="m")
        arrivals = tuple(i * 0.1 for i in range(6))
        plan = StagePlan(prompt_for=lambda i: Prompt("x", 1, 21), arrivals_s=arrivals, max_concurrency=1)
        result = asyncio.run(run_stage(client, plan))
    recs = sorted(result.records, key=lambda r: r.index)
    from_send = [r.ttft_s for r in recs]
    from_schedule = [r.token_times_s[0] - r.scheduled_s for r in recs]
    assert all(t is not None and 0.09 < t < 0.16 for t in from_send)
    # request i waits for the i requests before it (500 ms each, a little more on a busy machine)
    # minus its 100 ms later arrival
    for i, t in enumerate(from_schedule):
        assert t == pytest.approx(0.1 + 0.4 * i, rel=0.15, abs=0.05), (i, from_schedule)
    m = summarize(recs, result.duration_s)
    assert m["ttft_p50_s"] < 0.16 and m["ttft_sched_p50_s"] > 5 * m["ttft_p50_s"]  # type: ignore[operator]


def _burn(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10_000):  # pure Python: holds the GIL between switch intervals
            x += 1


def test_an_idle_client_is_not_client_bound_and_a_cpu_burning_one_is() -> None:
    """Against the server's stamps. Idle: not flagged, every measured error under 1 ms (skipped,
    with the errors, where this machine's own load kept every attempt's over it: then the flag is
    right). Burning: the GIL is held between switch intervals, chunks are read milliseconds late,
    and the stage is flagged."""
    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "25") as url:
        for _ in range(ATTEMPTS):  # an idle client on a machine other tests keep busy may still lag
            idle = _stage(url, 2, requests=4, output=24)
            idle_bounds, idle_reason = _verdict(idle)
            if idle_reason is None and max(b.bound_s for b in idle_bounds) < 1e-3:
                break
        stop = threading.Event()
        burner = threading.Thread(target=_burn, args=(stop,), daemon=True)
        burner.start()
        try:
            busy = _stage(url, 2, requests=4, output=24)
        finally:
            stop.set()
            burner.join()
    busy_bounds, busy_reason = _verdict(busy)
    assert busy_reason is not None and busy_reason.startswith("client-bound: the client's reads moved"), busy_bounds
    assert max(b.bound_s for b in busy_bounds) > 1e-3
    if idle_reason is not None or max(b.bound_s for b in idle_bounds) >= 1e-3:
        pytest.skip(f"this machine's load made an idle client's reads late by over 1 ms (lag max "
                    f"{max(idle.lag_s) * 1e3:.1f} ms) in every attempt: {idle_reason or idle_bounds}")
    assert idle_reason is None and max(b.bound_s for b in idle_bounds) < 1e-3


@pytest.mark.parametrize(("fault", "expected"), [
    ("http-500", "HTTP 500"),
    ("malformed-sse", "malformed SSE"),
    ("close-mid-stream", "stream closed"),
    ("huge-chunk", "malformed SSE: an event over 4 MiB"),
    ("never-end", "timeout"),
])
def test_each_fault_fails_its_request_with_the_reason_and_the_stage_goes_on(fault: str, expected: str) -> None:
    with running_server("--synthetic", "--ttft-ms", "5", "--itl-ms", "2", "--fault", fault,
                        "--fault-every", "2") as url:
        t = time.monotonic()
        result = _stage(url, 2, requests=6, output=8, read_timeout_s=1.0)
        took = time.monotonic() - t
    errors = [r.error for r in result.records]
    assert len(errors) == 6 and errors.count(None) >= 2, errors
    failed = [e for e in errors if e]
    assert failed and all(e.startswith(expected) for e in failed), errors
    assert took < 10


def test_an_unreachable_server_fails_every_request_with_the_reason() -> None:
    result = _stage("http://127.0.0.1:9", 2, requests=3, connect_timeout_s=2.0)
    assert [r.ok for r in result.records] == [False] * 3
    assert all((r.error or "").startswith("unreachable") for r in result.records), result.records[0].error
