"""`serve-bench` judges every stage VALID or INVALID (workloads/serving/measurements/validity.py),
against real servers on 127.0.0.1: a scripted server misbehaves in one way per test (an error event
inside the stream, a stream cut before [DONE], completions that never came, outputs shorter than
ignore_eos asked, an inter-token latency that grows over the stage) and each is INVALID with its
reason; `perfkit serve --synthetic` is VALID. The verdict is in run.json, the JSON output, the
terminal, Markdown and HTML tables."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from perfkit.reports.html.serving import workload_block
from perfkit.reports.markdown.serving import serving_lines
from perfkit.reports.serving.text import serving_table
from tests.helpers.scripted_server import Request, plain, scripted_server, text_chunk
from tests.helpers.serving_server import running_server

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
OUTPUT = 6  # tokens asked per request (with ignore_eos, serve-bench's default)


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def stream(tokens: int, pause_s: float = 0.0, *, done: bool = True, error_after: int | None = None) -> list[bytes | float]:
    """A streamed completion of `tokens` chunks of one token each, with cumulative usage."""
    pieces: list[bytes | float] = [HEAD]
    for k in range(1, tokens + 1):
        if pause_s:
            pieces.append(pause_s)
        pieces.append(_event(text_chunk("x", usage={"prompt_tokens": 4, "completion_tokens": k})))
        if error_after == k:
            pieces.append(_event({"error": {"message": "out of memory", "code": 500}}))
            return pieces
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return pieces


def completions(answer: Callable[[int], list[bytes | float]]) -> Callable[[Request], list[bytes | float]]:
    """A script answering the i-th completion request (from 0) with answer(i); other paths 404."""
    count, lock = [0], threading.Lock()

    def script(req: Request) -> list[bytes | float]:
        if req.method != "POST" or not req.path.startswith("/v1/completions"):
            return [plain("404 Not Found", b"no")]
        with lock:
            i = count[0]
            count[0] += 1
        return answer(i)

    return script


def bench(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], requests: int,
          *extra: str) -> dict[str, Any]:
    """One stage at concurrency 1; its JSON stage record."""
    code = main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--requests", str(requests),
                 "--output-len", str(OUTPUT), "--input-len", "4", "--warmup", "0", "--model", "m",
                 "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    (stage,) = json.loads(out)["stages"]
    return dict(stage["metrics"])


def _invalid_with(m: dict[str, Any], reason: str) -> None:
    assert m["validity"] == "INVALID", m.get("validity_reasons")
    assert any(r == reason or r.startswith(reason) for r in m["validity_reasons"]), m["validity_reasons"]


@pytest.mark.slow
def test_an_error_event_inside_the_stream_is_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(completions(lambda i: stream(OUTPUT, error_after=2 if i == 3 else None))) as (url, _):
        m = bench(url, tmp_path, capsys, 8)
    assert m["requests_failed"] == 1
    _invalid_with(m, "7 of 8 planned requests completed: 1 failed (server error in stream x1), 0 missing")


@pytest.mark.slow
def test_a_stream_cut_before_done_is_truncated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(completions(lambda i: stream(OUTPUT, done=i not in (1, 4)))) as (url, _):
        m = bench(url, tmp_path, capsys, 8)
    _invalid_with(m, "6 of 8 planned requests completed: 2 failed (stream closed before [DONE] x2), 0 missing")


@pytest.mark.slow
def test_completions_that_never_came_are_missing_from_the_population(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # every third request: an empty stream ([DONE] and nothing else)
    with scripted_server(completions(lambda i: [HEAD, b"data: [DONE]\n\n"] if i % 3 == 2 else stream(OUTPUT))) as (url, _):
        m = bench(url, tmp_path, capsys, 9)
    _invalid_with(m, "6 of 9 planned requests completed: 3 failed (no output tokens x3), 0 missing")


@pytest.mark.slow
def test_outputs_shorter_than_ignore_eos_asked_are_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(completions(lambda i: stream(OUTPUT - 3 if i in (0, 5) else OUTPUT))) as (url, _):
        m = bench(url, tmp_path, capsys, 8)
    assert m["requests_failed"] == 0
    _invalid_with(m, "2 of 8 requests returned fewer output tokens than asked with ignore_eos/min_tokens "
                     f"(shortest: {OUTPUT - 3} of {OUTPUT})")
    run_dir = next((tmp_path / "runs").iterdir())
    from perfkit.workloads.serving.client.request_file import read_requests

    (requests_file,) = run_dir.rglob("*.jsonl.gz")
    assert {r.expected_output_tokens for r in read_requests(requests_file)} == {OUTPUT}
    text = serving_table(load_run(run_dir / "run.json"), 80)  # the terminal table: a column and the reason
    assert "validity" in text.splitlines()[0] and "INVALID" in text.splitlines()[2]
    assert "concurrency=1: INVALID: 2 of 8 requests returned fewer output tokens" in text


@pytest.mark.slow
def test_a_server_whose_token_latency_grows_has_no_steady_state(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    n = 18  # 16 between the ramp-up and the drain: thirds of 5
    with scripted_server(completions(lambda i: stream(OUTPUT, 0.004 * (1 + 2 * i / (n - 1))))) as (url, _):
        m = bench(url, tmp_path, capsys, n)
    _invalid_with(m, "no steady state: per-request TPOT moved from ")
    assert m["requests_failed"] == 0


@pytest.mark.slow
def test_the_synthetic_server_is_valid_and_every_view_says_so(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # 50 ms between tokens: a loaded machine's client lag (a few ms) stays under 10% of it, mostly
    with running_server("--synthetic", "--ttft-ms", "10", "--itl-ms", "50") as url:
        for _ in range(3):  # a loaded machine can make the client the bottleneck (client-bound: INVALID)
            m = bench(url, tmp_path, capsys, 24, "--concurrency", "4")
            if not m.get("client_bound"):
                break
        else:
            pytest.skip("every stage was client-bound: this machine is too loaded to measure the server")
    assert m["validity"] == "VALID" and m["validity_reasons"] == [] and m["requests_planned"] == 24
    # 16 requests between the ramp-up and the drain: the TPOT drift test ran
    assert not any("requests with a TPOT" in u for u in m.get("validity_unchecked", []))
    run_dir = sorted((tmp_path / "runs").iterdir())[-1]
    run = load_run(run_dir / "run.json")
    assert run.points[0].metrics["validity"] == "VALID"
    markdown = "\n".join(serving_lines(run))
    assert "| validity |" in markdown and "| VALID |" in markdown
    assert "<th>validity</th>" in str(workload_block(run, run.points[0].workload or ""))


@pytest.mark.slow
def test_the_gate_refuses_an_invalid_stage_with_its_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.store.api import store_run
    from tests.helpers.serving_runs import serving_run

    db = f"sqlite:///{tmp_path / 'serving.db'}"
    base = serving_run("srv1", levels=(1, 4))
    cand = serving_run("srv2", commit="beef00", speed=1.2, created="2026-01-02T00:00:00+00:00", levels=(1, 4))
    reason = "7 of 8 planned requests completed: 1 failed (server error in stream x1), 0 missing"
    for run, verdict in ((base, "VALID"), (cand, "INVALID")):
        for p in run.points:
            p.metrics.update(validity=verdict if "concurrency=4" in p.key else "VALID",
                             validity_reasons=[reason] if verdict == "INVALID" and "concurrency=4" in p.key else [])
        store_run(run, db)
    main(["gate", "--baseline", "srv1", "--candidate", "srv2", "--db", db, "--format", "json", "--no-step-summary"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    refused = [r for r in rows if "concurrency=4" in r["metric"]]
    kept = [r for r in rows if "concurrency=1" in r["metric"]]
    assert refused and all(r["verdict"] == "incomparable" for r in refused)
    assert all(f"candidate INVALID stage: {reason}" in r["reason"] for r in refused), refused[0]
    assert kept and not any(r["verdict"] == "incomparable" for r in kept)
