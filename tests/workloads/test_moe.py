"""MoE layer: routing vs a per-token loop, implementations agree, cost counts touched experts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from perfkit.core.timing import TimingConfig
from perfkit.workloads.base import Point, RunContext, Unsupported
from perfkit.workloads.moe.cost import MoEShape, moe_cost
from perfkit.workloads.moe.layer import build_layer, loop_reference, support_problem
from perfkit.workloads.moe.runner import prepare
from perfkit.workloads.moe.spec import MoESpec

SHAPE = MoEShape(dim=48, expert_ffn_dim=80, experts=6, top_k=2, shared_experts=1, shared_ffn_dim=40)


def _loop_route(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per token, in float64: softmax, take the k largest, renormalize."""
    weights, ids = [], []
    for row in logits.double():
        p = torch.exp(row - row.max())
        p = p / p.sum()
        order = sorted(range(len(p)), key=lambda e: -float(p[e]))[:k]
        w = torch.stack([p[e] for e in order])
        weights.append(w / w.sum())
        ids.append(torch.tensor(order))
    return torch.stack(weights), torch.stack(ids)


def test_routing_matches_a_loop_reference() -> None:
    layer = build_layer(SHAPE, "fp32", "cpu", seed=3)
    x = torch.randn(50, SHAPE.dim, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        weights, ids = layer.route(x)
        ref_w, ref_ids = _loop_route(layer.gate(x), SHAPE.top_k)
    assert torch.equal(ids, ref_ids)
    assert torch.allclose(weights.double(), ref_w, atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(50))
    counts = layer.tokens_per_expert(x)
    assert sum(counts) == 50 * SHAPE.top_k and len(counts) == SHAPE.experts


@pytest.mark.parametrize("tokens", [1, 2, 37])
def test_implementations_match_the_loop_reference(tokens: int) -> None:
    layer = build_layer(SHAPE, "fp32", "cpu", seed=0)
    x = torch.randn(tokens, SHAPE.dim, generator=torch.Generator().manual_seed(tokens))
    with torch.no_grad():
        weights, ids = layer.route(x)
        ref = loop_reference(layer, x, weights, ids)
        for impl in ("grouped", "gather", "dense"):
            layer.impl = impl
            out = layer(x)
            assert float((out.double() - ref).norm() / ref.norm()) < 1e-5, impl
        layer.impl = "auto"
        assert layer.choose(tokens, static=False) == "grouped"
        assert layer.choose(tokens, static=True) == ("gather" if tokens * 2 < 6 else "dense")


def test_loop_reference_catches_wrong_routing() -> None:
    layer = build_layer(SHAPE, "fp32", "cpu", seed=0)
    x = torch.randn(9, SHAPE.dim, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        weights, ids = layer.route(x)
        right = loop_reference(layer, x, weights, ids)
        wrong = loop_reference(layer, x, weights, (ids + 1) % SHAPE.experts)
    assert float((wrong - right).norm() / right.norm()) > 0.1


def test_cost_counts_only_touched_experts() -> None:
    c = moe_cost(SHAPE, tokens=3, experts_touched=4, b=2)
    d, f = 48, 80
    assert c.flop == 2 * 3 * d * 6 + 3 * 2 * 6 * d * f + 3 * 6 * d * 40
    assert c.bytes == 2 * (2 * 3 * d + d * 6 + 4 * 3 * d * f + 3 * d * 40)
    assert moe_cost(SHAPE, 3, 6, 2).bytes - c.bytes == 2 * 2 * 3 * d * f


def test_runner_records_tokens_per_expert() -> None:
    spec = MoESpec.model_validate({"kind": "moe", "dim": 48, "expert_ffn_dim": 80, "experts": 16,
                                   "top_k": 2, "tokens": [1, 64], "impl": ["grouped", "gather"]})
    for params in spec.sweep():
        prepared = prepare(Point(spec=spec, params=params, timing=TimingConfig()), RunContext("cpu"))
        assert prepared.check is not None and prepared.metrics is not None
        with prepared.context():
            n = prepared.check()
        assert n.ok, n
        m = prepared.metrics(None)  # type: ignore[arg-type]
        assert sum(m["tokens_per_expert"]) == params["tokens"] * 2
        touched = sum(1 for c in m["tokens_per_expert"] if c)
        assert m["experts_touched"] == touched == prepared.params_extra["experts_touched"]
        assert prepared.cost == moe_cost(MoEShape(48, 80, 16, 2), params["tokens"], touched, 4)
        if params["tokens"] == 1:
            assert touched == 2


def test_spec_from_a_model_and_errors() -> None:
    spec = MoESpec.model_validate({"kind": "moe", "model": {"preset": "mixtral-8x7b"}, "tokens": [1, 8]})
    first = spec.sweep()[0]
    assert first == {"model": "mixtral-8x7b", "tokens": 1, "dim": 4096, "expert_ffn_dim": 14336,
                     "experts": 8, "top_k": 2, "shared_experts": 0, "shared_ffn_dim": 0,
                     "impl": "grouped", "dtype": "bf16"}
    with pytest.raises(ValueError, match="is dense"):
        MoESpec.model_validate({"kind": "moe", "model": {"preset": "tiny"}})
    with pytest.raises(ValueError, match="give dim, expert_ffn_dim"):
        MoESpec.model_validate({"kind": "moe", "experts": 4, "top_k": 1})
    with pytest.raises(ValueError, match="top_k 5 must be between 1 and experts 4"):
        MoESpec.model_validate({"kind": "moe", "dim": 8, "expert_ffn_dim": 8, "experts": 4, "top_k": 5}).sweep()


def _graph_timed_point(impl: str) -> Point:
    spec = MoESpec(kind="moe", dim=SHAPE.dim, expert_ffn_dim=SHAPE.expert_ffn_dim, experts=SHAPE.experts,
                   top_k=SHAPE.top_k, tokens=4, impl=impl)
    (params,) = spec.sweep()
    return Point(spec=spec, params=params, timing=TimingConfig(cuda_graph=True))


def test_grouped_is_not_timed_as_a_cuda_graph(tmp_path: Path) -> None:
    """grouped syncs to the host (.tolist()) inside the call: a CUDA graph of it cannot be
    captured, so with timing.cuda_graph the point is skipped with the reason, before any build."""
    from perfkit.pipeline.point_runner import PointPlan, run_point

    grouped = _graph_timed_point("grouped")
    with pytest.raises(Unsupported, match=r"impl grouped reads the tokens per expert on the host"):
        prepare(grouped, RunContext("cpu"))
    result = run_point(grouped, 0, RunContext("cpu"), PointPlan(torch_profiler=False, nvtx=False), tmp_path)
    assert result.status == "skipped" and "use impl gather or dense" in (result.error or "")
    assert support_problem({"impl": "auto", "dtype": "fp32"}, "cuda", timer_graph=True) is not None
    for impl in ("gather", "dense"):  # static shapes: capturable
        assert support_problem({"impl": impl, "dtype": "fp32"}, "cpu", timer_graph=True) is None
        assert prepare(_graph_timed_point(impl), RunContext("cpu")).fn().shape == (4, SHAPE.dim)
    assert support_problem({"impl": "grouped", "dtype": "fp32"}, "cpu", timer_graph=False) is None
