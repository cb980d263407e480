"""Tensor-parallel decode (`tp: N`): the sharding math in one process, the spec rules, and the CPU
example on 2 gloo ranks through the real CLI (tokens equal to the one-rank model's)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest
import torch

from perfkit.core.errors import EXIT_OK, SpecError
from perfkit.core.record import load_run
from perfkit.pipeline.spec import load_spec
from perfkit.workloads.decode.tp import collective_metrics, local_config, qkv_rows, shard_model
from perfkit.workloads.models.build import build_model
from perfkit.workloads.models.model import Block
from perfkit.workloads.models.presets import PRESETS
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tp", [2, 4])
def test_shards_reassemble_the_full_weights_and_their_partial_sums_the_full_outputs(tp: int) -> None:
    cfg = PRESETS["tiny"]  # 4 heads, 2 kv heads (GQA 2:1), d_ff 192
    if cfg.n_kv_heads % tp:
        cfg = dataclasses.replace(cfg, n_kv_heads=4)  # MHA, so that 4 ranks divide it
    full = build_model(cfg, "fp32", "cpu", seed=3)
    shards = [shard_model(full, tp, r, lambda t: t) for r in range(tp)]  # reduce: identity, summed here
    a, f = full.layers[0], [s.layers[0] for s in shards]
    assert isinstance(a, Block) and all(isinstance(b, Block) for b in f)
    # weights: the shards put back together are the full matrices, nothing left out or repeated
    rows = torch.cat([qkv_rows(cfg, tp, r) for r in range(tp)])
    assert sorted(rows.tolist()) == list(range(cfg.q_dim + 2 * cfg.kv_dim))
    assert torch.equal(torch.cat([b.attention.wqkv.weight for b in f]), a.attention.wqkv.weight[rows])
    assert torch.equal(torch.cat([b.attention.wo.weight for b in f], dim=1), a.attention.wo.weight)
    assert torch.equal(torch.cat([b.feed_forward.w1.weight for b in f]), a.feed_forward.w1.weight)
    assert torch.equal(torch.cat([b.feed_forward.w3.weight for b in f]), a.feed_forward.w3.weight)
    assert torch.equal(torch.cat([b.feed_forward.w2.weight for b in f], dim=1), a.feed_forward.w2.weight)
    assert shards[0].cfg == local_config(cfg, tp) and shards[0].cfg.n_heads == cfg.n_heads // tp
    # outputs: the row-parallel partial sums add up to the full attention and MLP outputs
    x = torch.randn(2, 5, cfg.dim)
    with torch.no_grad():
        assert torch.allclose(sum(b.feed_forward(x) for b in f), a.feed_forward(x), atol=1e-6)
        for m in [full, *shards]:
            m.setup_caches(2, 8)
        rope = full.rope[:5]
        got = sum(b.attention(x, rope, None, None, False) for b in f)
        assert torch.allclose(got, a.attention(x, rope, None, None, False), atol=1e-6)


def test_collective_metrics_from_traces_without_profiler_steps(tmp_path: Path) -> None:
    import json

    def trace(rank: int, comm_us: float) -> Path:
        ev = [{"ph": "X", "cat": "user_annotation", "name": "pt", "ts": 100.0 * i, "dur": 50.0, "pid": 1, "tid": 1}
              for i in range(2)]
        ev += [{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "ts": 100.0 * i + 10, "dur": comm_us,
                "pid": 1, "tid": 2} for i in range(2)]
        ev.append({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "ts": 5.0, "dur": 10.0, "pid": 1, "tid": 1})
        path = tmp_path / f"t{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": ev}))
        return path

    out = collective_metrics([trace(0, 20.0), trace(1, 100.0)], label="pt")
    # the metrics of analyzers/collectives/share.py (tests/analyzers/collectives/test_collective_share.py): windows
    # [0, 50) and [100, 150). rank 0: [5, 30) + [110, 130) = 45 us of 100; rank 1: 45 + 50 = 95 us
    assert list(out) == ["rank0_collective_share", "rank1_collective_share", "collective_share"]
    assert out["rank0_collective_share"] == pytest.approx(45 / 100)
    assert out["rank1_collective_share"] == pytest.approx(95 / 100)
    assert out["collective_share"] == pytest.approx(140 / 200)


SPEC = """\
name: tp
device: cpu
{launch}
workloads:
  - kind: decode
    model: {model}
    tp: {tp}
    prompt_len: [8]
    decode_steps: [4]
{extra}"""


def _spec(tmp_path: Path, tp: int = 2, launch: str = "launch: {nproc: 2}", model: str = "{preset: tiny}",
          extra: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(tp=tp, launch=launch, model=model, extra=extra))
    return path


def test_tp_sweeps_a_tp_param_and_tp_1_leaves_the_points_alone(tmp_path: Path) -> None:
    assert [p.params["tp"] for p in load_spec(_spec(tmp_path)).points()] == [2]
    assert "tp" not in load_spec(_spec(tmp_path, tp=1, launch="")).points()[0].params


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"launch": ""}, r"spec.yaml:7:\d+: tp 2 must equal the number of ranks \(1\).*--nproc 2"),
        ({"launch": "launch: {nproc: 4}"}, r"tp 2 must equal the number of ranks \(4\)"),
        ({"tp": 3, "launch": "launch: {nproc: 3}"}, r"tp 3 does not divide n_heads 4 of model 'tiny'"),
        ({"tp": 4, "launch": "launch: {nproc: 4}"}, r"tp 4 does not divide n_kv_heads 2"),
        ({"model": "{preset: tiny-moe}"}, r"mixture of experts: tp splits dense models only"),
        ({"extra": "    mode: [eager, compile]\n"}, r"tp > 1 runs mode eager or cuda_graph"),
    ],
)
def test_bad_tp_is_a_located_error(tmp_path: Path, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_spec(_spec(tmp_path, **kwargs))  # type: ignore[arg-type]


def test_nproc_option_must_match_tp(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"tp 2 must equal the number of ranks \(3\)"):
        load_spec(_spec(tmp_path), nproc=3)


@pytest.mark.slow
def test_cpu_example_two_ranks_tokens_equal_one_rank(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    cmd = [sys.executable, "-m", "perfkit", "profile", str(REPO / "examples" / "tp-decode-cpu.yaml"),
           "--out", str(tmp_path), "--no-store", "--quiet", "--quick"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = run_perfkit(cmd[3:], REPO, env, timeout_s=400)
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    run = load_run(Path(proc.stdout.strip().splitlines()[-1]))
    assert run.status == "complete" and len(run.points) == 2
    for p in run.points:
        assert p.status == "ok", (p.key, p.error)
        m = p.metrics
        assert m["tokens_match"] is True and m["tp"] == 2
        assert p.numerics is not None and p.numerics.ok and p.numerics.rel_err < 1e-5
        for r in (0, 1):
            assert m[f"rank{r}_ttft_s"] > 0 and m[f"rank{r}_tpot_s"] > 0 and f"rank{r}_mbu" in m
            assert 0 < m[f"rank{r}_collective_share"] < 1
        # overall = per token the slowest rank: never faster than either rank
        assert m["ttft_s"] >= max(m["rank0_ttft_s"], m["rank1_ttft_s"]) * (1 - 1e-9)
        assert len(m["generations"]) == 2 and len(m["generations"][0][0]) == m["output_tokens"]
        assert m["weight_bytes_per_step"] > 0 and 0 < m["collective_share"] < 1


@pytest.mark.parametrize(("tp", "dtype"), [(2, "fp32"), (4, "bf16")])
def test_a_shard_built_alone_equals_the_slice_of_the_full_model(tp: int, dtype: str) -> None:
    from perfkit.workloads.decode.tp import build_shard

    cfg = PRESETS["tiny"]
    if cfg.n_kv_heads % tp:
        cfg = dataclasses.replace(cfg, n_kv_heads=4)
    full = build_model(cfg, dtype, "cpu", seed=7)
    for r in range(tp):
        sliced = dict(shard_model(full, tp, r, lambda t: t).named_parameters())
        alone = dict(build_shard(cfg, dtype, "cpu", 7, tp, r, lambda t: t).named_parameters())
        assert sliced.keys() == alone.keys()
        for name, p in alone.items():
            assert torch.equal(p, sliced[name]), (r, name)
    other = build_shard(cfg, dtype, "cpu", 8, tp, r, lambda t: t)  # another seed, other weights
    assert not torch.equal(dict(other.named_parameters())["layers.0.attention.wqkv.weight"],
                           alone["layers.0.attention.wqkv.weight"])


@pytest.mark.slow
def test_tp_reference_none_gives_the_tokens_of_full(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: tpref\ndevice: cpu\nseed: 0\ncpu_threads: 1\nlaunch: {nproc: 2, point_timeout_s: 120}\n"
        "timing: {warmup_s: 0.01, budget_s: 0.05, min_reps: 3, max_reps: 20}\n"
        + "".join(f"  - kind: decode\n    name: {ref}\n    model: {{preset: tiny}}\n    tp: 2\n    batch: [2]\n"
                  f"    prompt_len: [8]\n    decode_steps: [4]\n    generate_reps: 1\n    tp_reference: {ref}\n"
                  for ref in ("full", "none")).join(["workloads:\n", ""]))
    cmd = [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(tmp_path / "out"), "--no-store",
           "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = run_perfkit(cmd[3:], REPO, env, timeout_s=400)
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    full, none = load_run(Path(proc.stdout.strip().splitlines()[-1])).points
    assert full.status == none.status == "ok", (full.error, none.error)
    assert full.params["tp_reference"] == "full" and none.params["tp_reference"] == "none"
    assert full.metrics["tokens_match"] is True and full.numerics is not None
    assert "tokens_match" not in none.metrics and none.numerics is None
    assert none.metrics["numerics_skipped"].startswith("tp_reference: none")
    assert len(full.metrics["greedy_tokens"]) == 2 and len(full.metrics["greedy_tokens"][0]) == 5
    assert none.metrics["greedy_tokens"] == full.metrics["greedy_tokens"]
