"""Expert-parallel MoE (`kind: moe` with `ep: N`): the dispatch / combine bookkeeping in one process
(the exchange simulated by slicing), the spec's checks, and 2 gloo ranks through the real CLI."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from perfkit.core.errors import EXIT_OK, SpecError
from perfkit.core.record import load_run
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.moe.cost import MoEShape
from perfkit.workloads.moe.ep import (
    combine,
    owned_experts,
    plan_send,
    recv_layout,
    run_local_experts,
)
from perfkit.workloads.moe.ep_run import ep_traffic, rank_batch
from perfkit.workloads.moe.layer import build_layer
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]


def test_split_sizes_follow_the_experts_each_rank_owns() -> None:
    ids = torch.tensor([[0, 3], [2, 1], [3, 0]])  # 3 tokens, top-2, 4 experts over 2 ranks
    plan = plan_send(ids, 4, 2)
    assert plan.expert_counts.tolist() == [2, 1, 1, 2]
    assert plan.send_splits == [3, 3]  # experts 0, 1 -> rank 0; 2, 3 -> rank 1
    assert ids.flatten()[plan.order].tolist() == [0, 0, 1, 2, 3, 3]  # stable sort by expert
    assert plan.token_of.tolist() == [0, 2, 1, 1, 0, 2]
    assert list(owned_experts(1, 8, 4)) == [2, 3]


def test_received_rows_go_expert_major_and_back() -> None:
    # rank with 2 local experts receiving from 3 sources: rows from s for expert j
    counts = torch.tensor([[1, 2], [0, 1], [2, 0]])
    layout = recv_layout(counts)
    assert layout.recv_splits == [3, 1, 2] and layout.local_counts == [3, 3]
    # source-major rows: s0e0, s0e1, s0e1, s1e1, s2e0, s2e0 (numbered 0..5)
    assert layout.to_expert_major.tolist() == [0, 4, 5, 1, 2, 3]
    rows = torch.arange(6)
    assert torch.equal(rows[layout.to_expert_major][layout.back], rows)
    empty = recv_layout(torch.zeros(2, 2, dtype=torch.int64))
    assert empty.to_expert_major.numel() == 0 and empty.recv_splits == [0, 0]


def _all_to_all(sends: list[torch.Tensor], splits: list[list[int]]) -> list[torch.Tensor]:
    """What all_to_all_single gives every rank: rank q gets chunk q of every rank's buffer, by source."""
    chunks = [list(torch.split(s, sp)) for s, sp in zip(sends, splits, strict=True)]
    return [torch.cat([chunks[s][q] for s in range(len(sends))]) for q in range(len(sends))]


@pytest.mark.parametrize(("ep", "experts", "shared"), [(2, 8, 0), (4, 8, 1), (4, 4, 0)])
def test_simulated_ranks_match_the_whole_layer(ep: int, experts: int, shared: int) -> None:
    shape = MoEShape(16, 32, experts, 2, shared, 24)
    layer = build_layer(shape, "fp32", "cpu", seed=3)
    xs = [rank_batch(5 + r, 16, 3, r, "fp32", "cpu") for r in range(ep)]  # different token counts
    with torch.no_grad():
        routes = [layer.route(x) for x in xs]
        plans = [plan_send(ids, experts, ep) for _, ids in routes]
        counts = _all_to_all([p.expert_counts for p in plans], [[experts // ep] * ep] * ep)
        layouts = [recv_layout(c.view(ep, experts // ep)) for c in counts]
        got = _all_to_all([x[p.token_of] for x, p in zip(xs, plans, strict=True)], [p.send_splits for p in plans])
        assert [g.shape[0] for g in got] == [sum(lay.local_counts) for lay in layouts]
        done = [run_local_experts(layer, owned_experts(q, experts, ep), g[lay.to_expert_major],
                                  lay.local_counts)[lay.back] for q, (g, lay) in enumerate(zip(got, layouts, strict=True))]
        back = _all_to_all(done, [lay.recv_splits for lay in layouts])
        for x, (w, _), p, ret in zip(xs, routes, plans, back, strict=True):
            y = combine(ret, p, w, x) + (layer.shared(x) if layer.shared is not None else 0)
            layer.impl = "grouped"
            torch.testing.assert_close(y, layer(x), rtol=1e-5, atol=1e-6)


def test_traffic_counts_only_rows_that_cross_ranks() -> None:
    routed = [[3, 1, 0, 2], [1, 1, 4, 2]]  # rank 0 sends 2 slots to rank 1's experts, rank 1 sends 2 to rank 0's
    t = ep_traffic(routed, dim=10, b=4)
    assert t["tokens_per_expert"] == [4, 2, 4, 4] and t["tokens_per_rank"] == [6, 8]
    assert t["all_to_all_bytes_by_rank"] == [(2 + 2) * 40, (2 + 2) * 40]
    assert t["all_to_all_bytes"] == 320
    assert t["load_imbalance"] == pytest.approx(4 / 3.5) and t["rank_load_imbalance"] == pytest.approx(8 / 7)


SPEC = """\
name: e
device: cpu
{launch}
workloads:
  - kind: moe
    dim: 16
    expert_ffn_dim: 32
    experts: {experts}
    top_k: 2
    tokens: 4
    {extra}
"""


def _spec(tmp_path: Path, launch: str = "launch: {nproc: 2}", experts: int = 8, extra: str = "ep: 2") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(launch=launch, experts=experts, extra=extra))
    return path


def test_ep_is_a_point_parameter_only_when_above_one(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert spec.points()[0].params["ep"] == 2 and ",ep=2," in spec.points()[0].key
    plain = load_spec(_spec(tmp_path, launch="", extra=""))
    assert "ep" not in plain.points()[0].params and "ep" not in plain.to_dict()["workloads"][0]


@pytest.mark.parametrize(("launch", "experts", "extra", "message"), [
    ("", 8, "ep: 2", r"spec.yaml:11:\d+: ep 2 must equal the number of ranks \(launch.nproc is 1\)"),
    ("launch: {nproc: 2}", 8, "ep: 4", r"spec.yaml:11:\d+: ep 4 must equal .*launch: \{nproc: 4\}"),
    ("launch: {nproc: 2}", 9, "ep: 2", r"experts 9 is not divisible by ep 2"),
    ("launch: {nproc: 2}", 8, "ep: 2\n    impl: [grouped, dense]", r"ep 2 runs the local experts grouped"),
    ("launch: {nproc: 2}", 8, "ep: 0", r"ep"),
])
def test_bad_ep_is_a_located_error(tmp_path: Path, launch: str, experts: int, extra: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_spec(_spec(tmp_path, launch, experts, extra))


def test_several_nodes_defer_the_rank_count_to_the_run(tmp_path: Path) -> None:
    launch = "launch: {nproc: 2, torchrun_args: [--nnodes=2, --rdzv-endpoint=h:29400]}"
    assert load_spec(_spec(tmp_path, launch, 8, "ep: 4")).points()[0].params["ep"] == 4


@pytest.mark.slow
def test_example_two_ranks_matches_one_rank(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    cmd = [sys.executable, "-m", "perfkit", "profile", str(REPO / "examples" / "ep-moe-cpu.yaml"),
           "--out", str(tmp_path), "--no-store", "--quiet", "--quick"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = run_perfkit(cmd[3:], REPO, env, timeout_s=400)
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    run = load_run(Path(proc.stdout.strip().splitlines()[-1]))
    assert run.status == "complete" and run.points
    for p in run.points:
        assert p.status == "ok", (p.key, p.error)
        assert p.numerics is not None and p.numerics.ok and "full layer" in p.numerics.reference
        m, t, k = p.metrics, p.params["tokens"], p.params["top_k"]
        assert p.params["ep"] == 2 and m["world_size"] == 2 and p.measurement is not None
        assert sum(m["tokens_per_rank"]) == sum(m["tokens_per_expert"]) == 2 * t * k
        assert [sum(row) for row in m["routed_by_rank"]] == [t * k, t * k]
        assert m["rank_load_imbalance"] >= 1.0 and m["load_imbalance"] >= m["rank_load_imbalance"] - 1e-12
        assert 0 < m["all_to_all_bytes"] == sum(m["all_to_all_bytes_by_rank"])
        assert m["all_to_all_bytes"] <= 2 * 2 * t * k * p.params["dim"] * (4 if p.params["dtype"] == "fp32" else 2)
        assert len(m["rank_traces"]) == 2
