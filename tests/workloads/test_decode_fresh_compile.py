"""Decode points start from a clean Dynamo: one point's compiled graphs and guards (and on CUDA
its CUDA-graph trees) do not carry into the next."""

from __future__ import annotations

import torch
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from perfkit.pipeline.spec import RunSpec
from perfkit.workloads.base import RunContext
from perfkit.workloads.decode.runner import fresh_compile_state, prepare
from perfkit.workloads.decode.spec import DecodeSpec


def _double(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


def test_each_decode_point_resets_what_earlier_points_compiled() -> None:
    torch.set_num_threads(1)
    compiled = torch.compile(_double, backend="eager")
    compiled(torch.ones(3))
    assert len(_debug_get_cache_entry_list(_double.__code__)) == 1  # an earlier point's graph
    spec = RunSpec.model_validate({
        "name": "t", "device": "cpu",
        "workloads": [DecodeSpec.model_validate({"kind": "decode", "model": {"preset": "tiny", "dtype": "fp32"},
                                                 "prompt_len": 4, "decode_steps": 2, "mode": "eager"})],
    })
    (point,) = spec.points()
    prepared = prepare(point, RunContext("cpu"))
    assert _debug_get_cache_entry_list(_double.__code__) == []
    assert prepared.fn() is not None
    compiled(torch.ones(3))
    assert len(_debug_get_cache_entry_list(_double.__code__)) == 1
    fresh_compile_state()
    assert _debug_get_cache_entry_list(_double.__code__) == []
