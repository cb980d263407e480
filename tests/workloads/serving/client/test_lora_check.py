"""The adapters check against servers that list them as vLLM does (perfkit serve, in this process)
and as SGLang does (its /get_server_info lora_paths): the form found, and one line naming an
adapter the server does not serve."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from perfkit.core.errors import EXIT_BAD_INPUT, SpecError
from perfkit.workloads.serving.client.lora_check import lora_format
from perfkit.workloads.serving.server.app import make_app
from perfkit.workloads.serving.server.options import ServeOptions, SyntheticOptions
from perfkit.workloads.serving.server.runner import build_state
from tests.helpers.profiler_servers import serving


def _perfkit(*modules: str) -> web.Application:
    return make_app(build_state(ServeOptions(mode=SyntheticOptions(), lora_modules=modules)))


def _sglang(lora_paths: object) -> web.Application:
    app = web.Application()

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "qwen", "object": "model"}]})

    async def info(request: web.Request) -> web.Response:
        return web.json_response({"model_path": "qwen", "lora_paths": lora_paths})

    app.router.add_get("/v1/models", models)
    app.router.add_get("/get_server_info", info)
    return app


def _check(app: web.Application, names: list[str], asked: str = "auto") -> str:
    async def run() -> str:
        async with serving(app) as url:
            return await asyncio.to_thread(lora_format, url, names, asked)

    return asyncio.run(run())


def _refused(app: web.Application, names: list[str], asked: str = "auto") -> str:
    with pytest.raises(SpecError) as err:
        _check(app, names, asked)
    msg = str(err.value)
    assert err.value.exit_code == EXIT_BAD_INPUT and "\n" not in msg
    return msg


def test_adapters_listed_as_models_take_the_vllm_form() -> None:
    assert _check(_perfkit("a", "b"), ["b", "a"]) == "vllm"
    assert _check(_perfkit("a", "b"), ["a"], "sglang") == "sglang"  # asked; perfkit serve lists a


def test_sglang_is_asked_for_its_lora_paths() -> None:
    assert _check(_sglang({"sql": "/p", "py": "/q"}), ["py"]) == "sglang"
    assert _check(_sglang(["sql=/p"]), ["sql"], "sglang") == "sglang"
    msg = _refused(_sglang(["sql=/p"]), ["py"])
    assert msg.startswith("--lora py: ") and "(it lists: sql)" in msg and "--lora-paths NAME=PATH" in msg


def test_an_adapter_the_server_does_not_serve_is_refused_with_what_it_lists() -> None:
    msg = _refused(_perfkit("a", "b"), ["a", "zz"])
    assert msg.startswith("--lora zz: ") and "a, b" in msg and "--lora-modules" in msg
    msg = _refused(_perfkit("a"), ["zz"], "vllm")
    assert msg.startswith("--lora zz: ") and "(it lists: a)" in msg
    msg = _refused(_perfkit(), ["a"])  # auto, nothing listed, not SGLang: both fixes named
    assert "(it lists: none)" in msg and "--lora-modules" in msg and "--lora-paths" in msg


def test_a_server_that_cannot_be_asked_is_refused() -> None:
    with pytest.raises(SpecError, match=r"--lora: cannot read http://127\.0\.0\.1:9/v1/models"):
        lora_format("http://127.0.0.1:9", ["a"], "auto")
