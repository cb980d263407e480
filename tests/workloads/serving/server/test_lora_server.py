"""`perfkit serve --lora-modules` (in this process, on a real socket): adapters listed as vLLM
lists them, requests naming them in either form served, an unknown model 404 with vLLM's error
body, `--lora-extra-ms` slowing one adapter's token gaps; option errors one line, exit 2."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.server.options import ServeOptions, SyntheticOptions
from tests.helpers.serving_server import Reply, post, served

OPTIONS = ServeOptions(mode=SyntheticOptions(ttft_s=0.005, itl_s=0.002, lora_extra_s=(("b", 0.01),)),
                       served_model_name="base", lora_modules=("a", "b"))
TOKENS = 6


def _body(model: str | None) -> dict[str, Any]:
    return {"prompt": "hi", "max_tokens": TOKENS, "stream": True} | ({"model": model} if model else {})


async def _exchange(options: ServeOptions, models: list[str | None]) -> tuple[Any, list[Reply]]:
    import aiohttp

    async with served(options) as url:
        async with aiohttp.ClientSession() as session, session.get(url + "/v1/models") as resp:
            listed = await resp.json()
        return listed, [await post(url, "/v1/completions", _body(m)) for m in models]


def _gaps_s(reply: Reply) -> float:
    times = [e.at_s for e in reply.events if e.data != b"[DONE]" and json.loads(e.data)["choices"]]
    return (times[-1] - times[0]) / (len(times) - 1)


@pytest.mark.slow
def test_adapters_are_listed_served_and_timed() -> None:
    listed, replies = asyncio.run(_exchange(OPTIONS, ["a", "base:b", "b", "base", None, "nope", "base:nope"]))
    cards = listed["data"]
    assert [(c["id"], c.get("parent")) for c in cards] == [("base", None), ("a", "base"), ("b", "base")]
    a, sglang_b, b, base, unnamed, unknown, unknown_sglang = replies
    assert all(r.status == 200 and r.done for r in (a, sglang_b, b, base, unnamed))
    assert a.chunks()[0]["model"] == "a" and sglang_b.chunks()[0]["model"] == "base:b"  # echoed, as vLLM
    for r in (unknown, unknown_sglang):
        assert r.status == 404
        err = json.loads(r.body)["error"]
        assert err["type"] == "NotFoundError" and err["code"] == 404 and err["param"] == "model"
    assert json.loads(unknown.body)["error"]["message"] == "The model `nope` does not exist."
    # b's token gaps are 10 ms longer than a's (2 ms); the base model's are a's
    assert _gaps_s(b) - _gaps_s(a) == pytest.approx(0.010, abs=0.002)
    assert _gaps_s(sglang_b) == pytest.approx(_gaps_s(b), abs=0.002)
    assert _gaps_s(base) == pytest.approx(_gaps_s(a), abs=0.002)


def test_without_adapters_any_model_is_served_as_before() -> None:
    plain = ServeOptions(mode=SyntheticOptions(ttft_s=0.001, itl_s=0.001))
    listed, (reply,) = asyncio.run(_exchange(plain, ["whatever"]))
    assert [c["id"] for c in listed["data"]] == ["perfkit-synthetic"]
    assert reply.status == 200 and reply.done


@pytest.mark.parametrize(("argv", "needle"), [
    (["--synthetic", "--lora-modules", "a:b"], "--lora-modules 'a:b': an adapter name"),
    (["--synthetic", "--lora-modules", "a,a"], "--lora-modules a: named twice"),
    (["--synthetic", "--lora-modules", "a", "--lora-extra-ms", "c=5"], "not among --lora-modules (a)"),
    (["--synthetic", "--lora-modules", "a", "--lora-extra-ms", "a=-1"], "write NAME=MS"),
    (["--model", "tiny", "--lora-modules", "a", "--lora-extra-ms", "a=1"], "--lora-extra-ms: not an option of --model"),
])  # fmt: skip
def test_bad_lora_options_are_one_line_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_vllm_style_name_equals_path_is_taken() -> None:
    from perfkit.workloads.serving.server.lora import lora_modules

    assert lora_modules(["sql=/adapters/sql", "py=/p,code"]) == ("sql", "py", "code")
