"""`perfkit profile` of decode workloads end to end: tiny dense + MoE presets, decode metrics with
their definitions, phase ranges in the trace, and a model too big to fit refused before allocating."""

from __future__ import annotations

import gzip
import json
import os
import statistics
from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.workloads.decode.metrics import DEFINITIONS
from tests.helpers.forked_cli import Result, run_perfkit

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
name: decode-test
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.05, min_reps: 5, target_rel_ci: 0.1}
profile: {profiled_iters: 1}
workloads:
  - kind: decode
    name: too-big
    model: {preset: llama-3.1-70b, n_layers: 2000}
    batch: 1
    prompt_len: 16
    decode_steps: 4
  - kind: decode
    name: dense
    model: {preset: tiny, dtype: fp32}
    batch: 2
    prompt_len: 16
    decode_steps: 8
    timed: [decode_step, generate]
    generate_reps: 2
    layer_ranges: true
  - kind: decode
    name: moe
    model: {preset: tiny-moe, dtype: fp32}
    batch: 1
    prompt_len: 16
    decode_steps: 8
    mode: [eager, cuda_graph]
    generate_reps: 2
"""


@pytest.fixture(scope="module")
def decode_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    tmp = tmp_path_factory.mktemp("decode")
    spec = tmp / "decode.yaml"
    spec.write_text(SPEC)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = run_perfkit(["profile", str(spec), "--out", str(tmp / "runs"), "--quiet"], REPO, env)
    return proc, Path(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_refused_point_fails_and_the_sweep_goes_on(decode_run: tuple[Result, Path]) -> None:
    proc, run_dir = decode_run
    assert proc.returncode == 3, proc.stderr  # one point failed
    run = load_run(run_dir)
    big = run.points[0]
    assert big.workload == "too-big" and big.status == "failed"
    assert (big.error or "").startswith("llama-3.1-70b bf16 needs ")  # the one-line refusal, as is
    assert "this machine has" in (big.error or "") and "use a smaller model" in (big.error or "")
    assert run.counts == {"ok": 3, "failed": 1, "skipped": 1}
    graph = run.points[-1]
    assert graph.status == "skipped" and "cuda_graph needs a CUDA device" in (graph.error or "")


def test_decode_metrics_with_definitions(decode_run: tuple[Result, Path]) -> None:
    run = load_run(decode_run[1])
    step, gen, moe = (p for p in run.points if p.status == "ok")
    for p in (step, gen, moe):
        m = p.metrics
        assert p.numerics is not None and p.numerics.ok and p.numerics.rel_err < 1e-5
        assert "full recompute" in p.numerics.reference
        assert m["definitions"] == DEFINITIONS
        assert 0 < m["ttft_s"] < m["e2e_s"]
        assert m["output_tokens"] == 9 and len(m["generations"]) == 2
        assert m["tpot_s"] == pytest.approx(statistics.median((g[-1] - g[0]) / 8 for g in m["generations"]))
        assert m["e2e_s"] == pytest.approx(statistics.median(g[-1] for g in m["generations"]))
        assert m["itl_s"]["n"] == 16 and m["itl_s"]["p50"] <= m["itl_s"]["p99"]
        batch = p.params["batch"]
        assert m["decode_tokens_per_s"] == pytest.approx(batch / m["tpot_s"])
        assert m["achieved_bytes_per_s"] == pytest.approx(
            (m["weight_bytes_per_step"] + m["kv_bytes_per_step"]) / m["tpot_s"])
        assert m["mbu"] is None and m["mfu"] is None  # no ceilings for this CPU
        assert any("mbu is null" in r for r in m["null_reasons"])
        assert p.params["cache_len"] == 24
        assert p.params["attention_prefill"] and p.params["attention_decode"]
    assert step.cost is not None and gen.cost is not None and gen.cost.flop > 8 * step.cost.flop / 2
    assert moe.params["moe_decode_impl"] == "gather"
    assert moe.metrics["moe"]["experts_touched_mean"] == 2.0  # batch 1, top-2
    assert all(sum(layer) == 2 for layer in moe.metrics["moe"]["tokens_per_expert_by_layer"])


def test_trace_is_split_by_phase(decode_run: tuple[Result, Path]) -> None:
    run_dir = decode_run[1]
    run = load_run(run_dir)
    gen = next(p for p in run.points if p.params.get("timed") == "generate")
    assert gen.trace is not None
    with gzip.open(run_dir / gen.trace) as fh:
        events = json.loads(fh.read())["traceEvents"]
    names = [e["name"] for e in events if e.get("cat") == "user_annotation"]
    assert names.count("prefill") == 1 and names.count("decode_step") == 8
    assert names.count("layer_0") == 9 and names.count("layer_1") == 9  # prefill + 8 steps
