"""`perfkit serve-bench` against a server that stamps nothing (a scripted one on loopback, like
vLLM or llama.cpp in that respect): each stage's client error is measured against the kernel's
receive stamps, said in the stage's numbers and notes, and the stamps are kept in the per-request
file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfkit.workloads.serving.client.request_file import read_requests
from perfkit.workloads.serving.client.rx_stamps import stamping_works
from tests.commands.test_serve_bench_validity import OUTPUT, bench, completions, stream
from tests.helpers.scripted_server import scripted_server


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux" or not stamping_works(),
                    reason="this kernel does not stamp received segments (SO_TIMESTAMPNS is Linux's)")
def test_a_server_without_stamps_gets_the_error_measured_against_the_kernels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(completions(lambda i: stream(OUTPUT, 0.02))) as (url, _):
        m = bench(url, tmp_path, capsys, 8)
    (requests,) = (tmp_path / "runs").glob("*/serving/*.jsonl.gz")
    records = [r for r in read_requests(requests) if r.ok]
    assert len(records) == 8
    # a client so late that it read two chunks in one piece (a loaded machine) keeps no stamps for
    # that request: the stage is bounded from the lag instead
    together = [r for r in records if len(set(r.chunk_times_s)) < len(r.chunk_times_s)]
    assert all(r.chunk_rx_s == () for r in together)
    if together:
        assert m["client_error_source"] == "lag around each read", m.get("serving_notes")
        pytest.skip(f"{len(together)} of 8 requests had two chunks read in one piece on this loaded machine")
    assert m["client_error_source"] == "kernel receive stamps", m.get("serving_notes")
    note = next(n for n in m["serving_notes"] if n.startswith("client error (kernel receive stamps): TTFT p50 "))
    assert "ITL p50" in note and "E2E p50" in note
    assert set(m["client_error_bounds"]) >= {"ttft_p50_s", "tpot_p50_s", "token_itl_p50_s", "e2e_p50_s"}
    for r in records:  # one stamp per chunk, between the send and the client's own read
        assert len(r.chunk_rx_s) == len(r.chunk_times_s) == OUTPUT
        assert all((r.sent_s or 0.0) < rx <= t + 1e-4 for rx, t in zip(r.chunk_rx_s, r.chunk_times_s, strict=True))
