"""The parts of `perfkit serve` that need no socket: tokenizer, request parsing, metrics text,
slots, faults, spec-decode simulation and the command's option checks."""

from __future__ import annotations

import asyncio
import random

import pytest

from perfkit.cli import main
from perfkit.core.errors import SpecError
from perfkit.workloads.serving.server.engine import EngineLoad
from perfkit.workloads.serving.server.faults import FaultPicker
from perfkit.workloads.serving.server.metrics import ServerMetrics, render
from perfkit.workloads.serving.server.options import SpecDecodeOptions, chunk_sizes
from perfkit.workloads.serving.server.protocol import CHAT, COMPLETION, RequestError, parse_request
from perfkit.workloads.serving.server.slot_pool import SlotPool
from perfkit.workloads.serving.server.spec_decode import SpecDecodeCounters, accepted_tokens
from perfkit.workloads.serving.server.tokenizer import count_tokens, pieces, token_ids


def test_tokenizer_is_about_four_bytes_a_token_and_deterministic() -> None:
    assert pieces("hello world") == ["hell", "o", " worl", "d"]
    assert count_tokens("a b c") == 3
    assert count_tokens("") == 0
    assert count_tokens("x" * 400) == 100
    ids = token_ids("the quick brown fox", 512)
    assert ids == token_ids("the quick brown fox", 512) and all(0 <= i < 512 for i in ids)


def test_completion_request_fields() -> None:
    req = parse_request(COMPLETION, {"model": "m", "prompt": [1, 2, 3], "max_tokens": 7, "stream": True,
                                     "ignore_eos": True, "logprobs": 2,
                                     "stream_options": {"include_usage": True, "continuous_usage_stats": True}})
    assert (req.prompt_tokens, req.max_tokens, req.stream, req.include_usage, req.continuous_usage,
            req.logprobs) == (3, 7, True, True, True, 2)
    assert parse_request(COMPLETION, {"prompt": ["one two"]}).prompt_tokens == 2  # a batch of one


def test_chat_request_fields() -> None:
    req = parse_request(CHAT, {"messages": [{"role": "system", "content": "be brief"},
                                            {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                               "max_tokens": 9, "max_completion_tokens": 4, "logprobs": True})
    assert (req.prompt_text, req.max_tokens, req.logprobs) == ("be brief\nhi", 4, 1)


@pytest.mark.parametrize(("kind", "body", "param"), [
    (COMPLETION, [], None),
    (COMPLETION, {"max_tokens": 3}, "prompt"),
    (COMPLETION, {"prompt": [1, "a"]}, "prompt"),
    (COMPLETION, {"prompt": ["a", "b"]}, "prompt"),
    (COMPLETION, {"prompt": "a", "max_tokens": 0}, "max_tokens"),
    (COMPLETION, {"prompt": "a", "max_tokens": "5"}, "max_tokens"),
    (COMPLETION, {"prompt": "a", "stream": "yes"}, "stream"),
    (COMPLETION, {"prompt": "a", "stream_options": {"include_usage": True}}, "stream_options"),
    (COMPLETION, {"prompt": "a", "logprobs": -1}, "logprobs"),
    (COMPLETION, {"prompt": "a", "n": 2}, "n"),
    (CHAT, {"prompt": "a"}, "messages"),
    (CHAT, {"messages": [{"content": "no role"}]}, "messages"),
    (CHAT, {"messages": [{"role": "user", "content": "a"}], "logprobs": 3}, "logprobs"),
])  # fmt: skip
def test_bad_requests_name_the_field(kind: str, body: object, param: str | None) -> None:
    with pytest.raises(RequestError) as info:
        parse_request(kind, body)
    assert info.value.status == 400 and info.value.param == param


def test_metrics_exposition() -> None:
    m = ServerMetrics("my-model", spec=SpecDecodeCounters(2))
    m.prompt_tokens, m.generation_tokens = 5, 7
    m.ttft.observe(0.03)
    m.itl.observe(0.004, 3)
    m.spec.record(1) if m.spec else None
    text = render(m, EngineLoad(2, 1, 0.25))
    lines = text.splitlines()
    assert 'perfkit:num_requests_running{model_name="my-model"} 2.0' in lines
    assert 'perfkit:kv_cache_usage_perc{model_name="my-model"} 0.25' in lines
    assert "# TYPE perfkit:prompt_tokens counter" in lines
    assert 'perfkit:generation_tokens_total{model_name="my-model"} 7.0' in lines
    assert 'perfkit:time_to_first_token_seconds_bucket{le="0.02",model_name="my-model"} 0.0' in lines
    assert 'perfkit:time_to_first_token_seconds_bucket{le="0.04",model_name="my-model"} 1.0' in lines
    assert 'perfkit:inter_token_latency_seconds_bucket{le="+Inf",model_name="my-model"} 3.0' in lines
    assert 'perfkit:inter_token_latency_seconds_count{model_name="my-model"} 3.0' in lines
    assert 'perfkit:spec_decode_num_accepted_tokens_per_pos_total{position="1",model_name="my-model"} 0.0' in lines
    assert text.endswith("\n")


def test_slots_are_first_come_first_served_and_a_cancelled_waiter_leaves() -> None:
    async def scenario() -> list[str]:
        pool, order = SlotPool(1), []

        async def user(name: str, hold_s: float) -> None:
            await pool.acquire()
            order.append(name)
            await asyncio.sleep(hold_s)
            pool.release()

        first = asyncio.create_task(user("a", 0.02))
        await asyncio.sleep(0)
        gone = asyncio.create_task(user("gone", 0))
        rest = [asyncio.create_task(user(n, 0)) for n in "bc"]
        await asyncio.sleep(0.005)
        assert (pool.held, pool.waiting) == (1, 3)
        gone.cancel()
        await asyncio.gather(first, *rest)
        assert (pool.held, pool.waiting) == (0, 0)
        return order

    assert asyncio.run(scenario()) == ["a", "b", "c"]


def test_fault_every_nth_request() -> None:
    picker = FaultPicker("http-500", 3)
    assert [picker.next() for _ in range(6)] == [None, None, "http-500", None, None, "http-500"]
    assert FaultPicker(None, 1).next() is None


def test_spec_decode_acceptance_rate_is_seeded() -> None:
    spec, rng, counters = SpecDecodeOptions(0.7, 3), random.Random(0), SpecDecodeCounters(3)
    for _ in range(4000):
        counters.record(accepted_tokens(rng, spec))
    assert counters.draft_tokens == 12000
    assert counters.accepted_per_pos[0] / counters.drafts == pytest.approx(0.7, abs=0.03)
    assert counters.accepted_per_pos[2] / counters.drafts == pytest.approx(0.7**3, abs=0.03)
    assert sum(counters.accepted_per_pos) == counters.accepted_tokens


def test_chunk_sizes() -> None:
    assert chunk_sizes("1,4") == (1, 4)
    for bad in ("0", "a", "1,,2", ""):
        with pytest.raises(SpecError):
            chunk_sizes(bad)


@pytest.mark.parametrize(("argv", "needle"), [
    (["--synthetic", "--max-batch", "4"], "--max-batch: not an option of --synthetic"),
    (["--model", "tiny", "--ttft-ms", "5"], "--ttft-ms: not an option of --model"),
    (["--model", "nope"], "no such preset"),
    (["--model", "tiny", "--dtype", "fp8"], "--dtype 'fp8'"),
    (["--model", "tiny", "--device", "tpu"], "--device 'tpu'"),
    (["--model", "tiny", "--cache-len", "99999"], "max_seq_len"),
    (["--synthetic", "--tokens-per-chunk", "0"], "every size must be >= 1"),
    (["--synthetic", "--spec-k", "3"], "go together"),
    (["--synthetic", "--spec-k", "3", "--spec-accept-rate", "1.5"], "0..1"),
    (["--synthetic", "--spec-k", "3", "--spec-accept-rate", ".5", "--tokens-per-chunk", "2"], "drop --tokens-per-chunk"),
])  # fmt: skip
def test_bad_options_are_one_line_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["--port", "70000"], ["--synthetic", "--model", "tiny"], [],
                                  ["--synthetic", "--ttft-ms", "-1"], ["--synthetic", "--fault", "nope"]])
def test_bad_option_values_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", *argv])
    assert info.value.code == 2 and capsys.readouterr().err.count("\n") == 1


def test_a_port_in_use_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--synthetic", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"--port {port}: cannot listen" in err and err.count("\n") == 1


def test_a_missing_cuda_device_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert main(["serve", "--model", "tiny", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA device here" in err and err.count("\n") == 1
