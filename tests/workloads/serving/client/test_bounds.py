"""The client believes nothing a server says (client/bounds.py), through `perfkit serve-bench`
against hostile servers on 127.0.0.1: a count past max_tokens, a trailing usage chunk that lies,
logprobs claiming 400,000 tokens, usage stuck while text streams, NaN / Infinity in stamps and
/metrics, a chunk nested deeply. Each lie fails its request with `untrusted count` (counted under
failures) or is dropped with a note; the stage is measured on the honest requests, run.json has
no Infinity, and nothing is fatal to the stage."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from tests.helpers.scripted_server import Request, plain, scripted_server, sse, text_chunk

OUTPUT_LEN = 8


def _usage(n: int) -> dict[str, Any]:
    return {"prompt_tokens": 4, "completion_tokens": n, "total_tokens": 4 + n}


def _honest(req: Request) -> list[bytes | float]:
    return [sse([text_chunk("t", usage=_usage(i)) for i in range(1, OUTPUT_LEN + 1)])]


def _every_other(lie: Callable[[], list[Any]]) -> Callable[[Request], list[bytes | float]]:
    """Odd requests honest, even ones the lie (so the stage has both)."""
    seen = [0]

    def script(req: Request) -> list[bytes | float]:
        if req.path == "/metrics":
            return [plain("200 OK", b"# nothing\n")]
        seen[0] += 1
        return _honest(req) if seen[0] % 2 else [sse(lie())]
    return script


LIES: dict[str, Callable[[], list[Any]]] = {
    "usage jumps to 1e9": lambda: [text_chunk("a", usage=_usage(1)), text_chunk("b", usage=_usage(10**9))],
    "usage jumps to 1e7": lambda: [text_chunk("a", usage=_usage(1)), text_chunk("b", usage=_usage(10**7))],
    "usage past max_tokens": lambda: [text_chunk("a", usage=_usage(OUTPUT_LEN + 1))],
    "trailing usage chunk claims 1e6": lambda: [text_chunk("a"), text_chunk("b"),
                                                {"choices": [], "usage": _usage(10**6)}],
    "trailing usage disagrees with continuous usage": lambda: [
        text_chunk("a", usage=_usage(1)), text_chunk("b", usage=_usage(2)), {"choices": [], "usage": _usage(5)}],
    "logprobs claim 400,000 tokens": lambda: [{"choices": [{"text": "a", "logprobs": {"tokens": [1] * 400_000}}]}],
    "usage stuck at 1 over 10 chunks": lambda: [text_chunk("a", usage=_usage(1)) for _ in range(10)],
}


def _bench(url: str, tmp_path: Path, *extra: str) -> int:
    return main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--no-store", "--concurrency", "1",
                 "--requests", "6", "--output-len", str(OUTPUT_LEN), "--warmup", "0", "--format", "json", *extra])


def _run_json(tmp_path: Path) -> dict[str, Any]:
    text = next((tmp_path / "runs").rglob("run.json")).read_text()
    assert "Infinity" not in text and "NaN" not in text
    return dict(json.loads(text))


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_count_fails_its_request_never_the_stage(lie: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(_every_other(LIES[lie])) as (url, _):
        code = _bench(url, tmp_path)
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err, err
    (stage,) = json.loads(out)["stages"]
    m = stage["metrics"]
    assert m["requests_ok"] == 3 and m["requests_failed"] == 3, m
    assert any(reason.startswith("untrusted count") for reason in m["failures"]), m["failures"]
    # what was stored is what the honest requests streamed
    assert m["output_tokens_mean"] == OUTPUT_LEN if "output_tokens_mean" in m else True
    assert m["output_tok_per_s"] < 1e6
    _run_json(tmp_path)


def test_every_request_lying_fails_the_stage_with_the_reason(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(lambda req: [sse(LIES["usage jumps to 1e9"]())]) as (url, _):
        code = _bench(url, tmp_path, "--format", "text")
    err = capsys.readouterr().err
    assert code == 3 and "untrusted count" in err and "max_tokens" in err, err


def _stamps(req: Request) -> list[bytes | float]:
    if req.path == "/metrics":
        return [plain("200 OK", b"vllm:generation_tokens_total NaN\nvllm:prompt_tokens_total +Inf\n"
                                b"vllm:num_requests_running 1e308\n")]
    events = [b'{"choices": [{"text": "a"}], "perfkit": {"sent_s": NaN, "tokens": 1}}',
              b'{"choices": [{"text": "b"}], "perfkit": {"sent_s": Infinity, "tokens": 1}, '
              b'"timings": {"predicted_ms": -Infinity}}',
              b'{"choices": [{"text": "c"}], "perfkit": {"sent_s": 1e400, "tokens": 1, "x": "\\u001b[31m"}}',
              b'{"choices": [{"text": "d"}], "usage": {"completion_tokens": NaN, "prompt_tokens": 99999999999}}']
    return [sse(events)]


def test_non_finite_stamps_and_metrics_are_dropped_with_a_count(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with scripted_server(_stamps) as (url, _):
        code = _bench(url, tmp_path)
    out, err = capsys.readouterr()
    assert code == 0, err
    (stage,) = json.loads(out)["stages"]
    m = stage["metrics"]
    assert m["requests_ok"] == 6, m
    notes = " ".join(m["serving_notes"])
    assert "not a finite number x" in notes and "usage.prompt_tokens over" in notes, notes
    for value in m.get("server_metrics", {}).values():
        assert isinstance(value, (int, float)) and math.isfinite(value)
    run = _run_json(tmp_path)
    assert run["points"][0]["status"] == "ok"
    # the json view too (a lying /metrics once broke --format json)
    assert "Infinity" not in out and "NaN" not in out


def test_a_chunk_nested_deeply_fails_its_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = b'{"a":' * 200_000 + b"1" + b"}" * 200_000
    with scripted_server(_every_other(lambda: [deep])) as (url, _):
        code = _bench(url, tmp_path)
    out, err = capsys.readouterr()
    assert code == 0, err
    (stage,) = json.loads(out)["stages"]
    assert stage["metrics"]["requests_ok"] == 3
    assert stage["metrics"]["failures"] == {"malformed SSE": 3}
