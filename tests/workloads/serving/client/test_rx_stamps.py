"""The kernel's receive stamps of the client's reads (client/rx_stamps.py), on real loopback TCP
and against `perfkit serve --synthetic`: a read made late on purpose carries a stamp from when the
bytes arrived, the reader gets one stamp per piece, every chunk's stamp lies between the server's
own stamp of it and the client's read, and the stage's errors measured against them catch a busy
client as the server's stamps do."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from perfkit.workloads.serving.client.rx_stamps import (
    PieceStamps,
    StampedSocket,
    realtime_offset_ns,
    stamped_socket,
    stamping_works,
)
from perfkit.workloads.serving.client.send import ClientOptions, Prompt
from perfkit.workloads.serving.client.stage import StagePlan, StageResult, run_stage
from perfkit.workloads.serving.measurements.client_bound import client_errors, stage_verdict
from perfkit.workloads.serving.measurements.client_error import FROM_RX, FROM_STAMPS
from perfkit.workloads.serving.measurements.rx_error import rx_errors
from perfkit.workloads.serving.measurements.stamp_error import stamp_errors
from tests.helpers.serving_server import running_server

linux = pytest.mark.skipif(sys.platform != "linux" or not stamping_works(),
                           reason="this kernel does not stamp received segments (SO_TIMESTAMPNS is Linux's)")


@pytest.fixture
def sender() -> Iterator[tuple[StampedSocket, socket.socket]]:
    """(a client StampedSocket, the server side of its connection) on loopback."""
    listener = socket.create_server(("127.0.0.1", 0))
    host, port = listener.getsockname()[:2]
    info = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0]
    client = stamped_socket(info)
    assert isinstance(client, StampedSocket)
    client.connect((host, port))
    server, _ = listener.accept()
    listener.close()
    for _ in range(100):  # the kernel turns receive stamping on a moment after the first socket asks
        server.sendall(b".")
        client.recv(1)
        if client.rx_ns:
            break
        time.sleep(0.01)
    assert client.rx_ns, "no read was stamped"
    client.rx_ns.clear()
    yield client, server
    client.close()
    server.close()


def _mono_ns(rx_ns: int) -> float:
    return (rx_ns - realtime_offset_ns()) / 1e9


@linux
def test_a_late_read_carries_the_time_the_bytes_arrived(sender: tuple[StampedSocket, socket.socket]) -> None:
    client, server = sender
    before = time.monotonic()
    server.sendall(b"first")
    sent = time.monotonic()
    time.sleep(0.05)  # the client reads 50 ms late
    assert client.recv(100) == b"first"
    read = time.monotonic()
    (rx,) = client.rx_ns
    assert before - 0.001 <= _mono_ns(rx) <= sent + 0.001  # arrived at once on loopback
    assert read - _mono_ns(rx) >= 0.049
    server.sendall(b"second")
    time.sleep(0.02)
    buf = bytearray(100)
    assert client.recv_into(buf) == 6 and bytes(buf[:6]) == b"second"  # asyncio's buffered path
    assert len(client.rx_ns) == 2 and client.rx_ns[1] > rx


@linux
def test_each_piece_gets_its_first_reads_stamp_or_the_last_one_before(
        sender: tuple[StampedSocket, socket.socket]) -> None:
    client, server = sender
    server.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    client.recv(100)  # the headers' read, before the body is read
    headers_rx = client.rx_ns[-1]
    t0 = time.monotonic()
    pieces = PieceStamps(client, t0)
    assert client.rx_ns == []
    assert pieces.next_s() == pytest.approx(_mono_ns(headers_rx) - t0, abs=1e-4)  # body bytes that came with them
    for word in (b"a", b"b"):
        time.sleep(0.02)
        server.sendall(word)
        time.sleep(0.005)
        client.recv(100)
    first, second = client.rx_ns
    # one piece filled by two reads: the earlier stamp (an error no smaller than any of its tokens')
    assert pieces.next_s() == pytest.approx(_mono_ns(first) - t0, abs=1e-4)
    assert _mono_ns(second) - _mono_ns(first) > 0.015
    assert pieces.next_s() == pytest.approx(_mono_ns(second) - t0, abs=1e-4)  # nothing new: the last


def _stage(url: str, concurrency: int = 2, requests: int = 8, output: int = 16) -> StageResult:
    client = ClientOptions(base_url=url, model="m")
    plan = StagePlan(prompt_for=lambda i: Prompt("a b c d", 4, output), concurrency=concurrency,
                     requests=requests, warmup=concurrency)
    return asyncio.run(run_stage(client, plan))


def _burn(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10_000):  # pure Python: holds the GIL between switch intervals
            x += 1


@linux
@pytest.mark.slow
def test_stage_errors_from_kernel_stamps_agree_with_the_servers_and_catch_a_busy_client() -> None:
    import dataclasses

    with running_server("--synthetic", "--ttft-ms", "20", "--itl-ms", "15") as url:
        idle = _stage(url)
        stop = threading.Event()
        burner = threading.Thread(target=_burn, args=(stop,), daemon=True)
        burner.start()
        try:
            busy = _stage(url, concurrency=1)
        finally:
            stop.set()
            burner.join()
    for result in (idle, busy):
        ok = [r for r in result.records if r.ok]
        assert len(ok) == 8
        for r in ok:
            if len(set(r.chunk_times_s)) < len(r.chunk_times_s):  # two chunks read in one piece: no stamps
                assert r.chunk_rx_s == ()
                continue
            # a stamp per chunk: after the server wrote it, never after the client read it
            written = [float(t) - result.t0_monotonic_s  # the server's stamps of the chunks with tokens
                       for t, k in zip(r.server["sent_s"], r.server["tokens"], strict=True) if k]  # type: ignore[call-overload]
            assert len(written) == len(r.chunk_rx_s) == len(r.chunk_times_s) > 0
            for w, rx, t in zip(written, r.chunk_rx_s, r.chunk_times_s, strict=True):
                assert w - 1e-4 <= rx <= t + 1e-4, (w, rx, t)  # 0.1 ms: the two clocks' offset, read apart
        measured = rx_errors(result.records)
        assert (measured is None) == any(not r.chunk_rx_s for r in ok)
        if measured is None:
            continue
        by_rx = {b.metric: b.measured_s for b in measured}
        by_server = {b.metric: b.measured_s for b in stamp_errors(result.records, result.t0_monotonic_s) or []}
        assert set(by_rx) == set(by_server) == {"ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "token_itl_p50_s",
                                               "token_itl_p99_s", "e2e_p50_s"}
        for key in ("ttft_p50_s", "e2e_p50_s"):  # the server's stamps also carry its write and the transit
            a, b = by_rx[key], by_server[key]
            assert a is not None and b is not None and a <= b + 1e-4, (key, by_rx, by_server)
    # a server without stamps: the verdict is measured against the kernel's stamps where every
    # request's chunks came one per piece, else bounded from the lag; the burning client is caught
    unstamped = [dataclasses.replace(r, server={}) for r in busy.records]
    bounds = client_errors(unstamped, busy.lag_s, busy.lag_times_s, busy.t0_monotonic_s, busy.lag_on_thread)
    kernel = rx_errors(busy.records) is not None
    assert {b.source for b in bounds} == ({FROM_RX} if kernel else {"lag around each read"})
    assert {b.source for b in client_errors(busy.records, busy.lag_s, busy.lag_times_s, busy.t0_monotonic_s,
                                            busy.lag_on_thread)} == {FROM_STAMPS}
    assert max(b.bound_s for b in bounds) > 1e-3  # the burning thread made reads late
    _, reason = stage_verdict(unstamped, busy.lag_s, busy.lateness_s, busy.mean_interarrival_s, busy.lag_times_s,
                              busy.t0_monotonic_s, busy.lag_on_thread)
    assert reason is not None and reason.startswith("client-bound: "), reason
