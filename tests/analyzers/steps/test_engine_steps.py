"""Engine steps from real traces (vLLM, SGLang, perfkit's decoder) and from range names."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.analyzers.loaders.trace_files import load_trace_file
from perfkit.analyzers.steps.engine import engine_steps
from perfkit.analyzers.steps.engine_names import parse_step_name
from perfkit.analyzers.steps.samples import UNATTRIBUTED_GRAPH, step_samples

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"


def test_range_names_of_each_engine() -> None:
    s = parse_step_name("perfkit_step#12 mixed bs=5 tokens=70")
    assert s is not None and (s.engine, s.kind, s.batch, s.tokens) == ("perfkit serve", "mixed", 5, 70)
    s = parse_step_name("[Executor] _forward_step 7: 0 ctx reqs, 64 gen reqs")
    assert s is not None and (s.engine, s.kind, s.batch, s.tokens) == ("TensorRT-LLM", "decode", 64, None)
    s = parse_step_name("_forward_step: 2 ctx reqs, 0 gen reqs")
    assert s is not None and s.kind == "prefill"
    s = parse_step_name("step[EXTEND bs=3]")
    assert s is not None and (s.engine, s.kind, s.batch) == ("SGLang", "prefill", 3)
    s = parse_step_name("execute_8192_context_9(sq8155sk8430)_generation_37(sq37sk3)")
    assert s is not None and (s.engine, s.kind, s.batch, s.tokens) == ("vLLM", "mixed", 46, 8192)
    assert parse_step_name("ProfilerStep#3") is None


def test_sglang_trace_prefers_its_own_step_range_and_marks_graph_time_unattributed() -> None:
    table = load_trace_file(DATA / "tracelens" / "sglang_qwen3_8b_decode.json.gz")
    steps = engine_steps(table)
    assert steps.method == "SGLang step ranges"
    assert steps.frame[["kind", "batch"]].values.tolist() == [["decode", 32]]
    s = step_samples(table, steps)
    ops = s[s["level"] == "op"].set_index("key")["time_ns"]
    busy = int(s[(s["level"] == "step") & (s["key"] == "busy")]["time_ns"].sum())
    # 544 of 558 GPU ops replayed by one hipGraphLaunch: most GPU time has no launching op, and says so
    assert ops[UNATTRIBUTED_GRAPH] > 0.9 * ops.sum()
    assert s[s["level"] == "category"]["time_ns"].sum() >= busy  # categories hold every op's time, none as idle


def test_vllm_mixed_step() -> None:
    table = load_trace_file(DATA / "tracelens" / "vllm_prefilldecode_piecewise.json.gz")
    steps = engine_steps(table)
    assert steps.method == "vLLM step ranges"
    assert steps.frame[["kind", "batch", "tokens"]].values.tolist() == [["mixed", 46, 8192]]
    s = step_samples(table, steps)
    cats = s[s["level"] == "category"].set_index("key")["time_ns"]
    assert cats.idxmax() == "GEMM"
    assert "vllm::unified_attention_with_output" in set(s.loc[s["level"] == "op", "key"])


def test_gaps_when_no_step_ranges() -> None:
    table = load_trace_file(DATA / "tracelens" / "mi210_gpu_only.json.gz")
    steps = engine_steps(table)
    assert steps.method.startswith("gaps in the op stream")
    assert len(steps) >= 1
    assert (steps.frame["end_ns"] > steps.frame["ts_ns"]).all()


@pytest.mark.slow
def test_perfkit_decoder_trace_steps_and_ranges() -> None:
    table = load_trace_file(DATA / "perfkit" / "tiny_eager.json.gz")
    steps = engine_steps(table)
    assert steps.method == "perfkit serve step ranges"
    assert steps.frame["kind"].tolist() == ["prefill"] + ["decode"] * 8
    assert steps.frame["tokens"].tolist() == [64] + [4] * 8
    s = step_samples(table, steps)
    ranges = s[(s["level"] == "range") & (s["kind"] == "decode")]
    assert set(ranges["key"]) == {"perfkit_attention", "perfkit_mlp"}
    assert (ranges.groupby("step")["count"].sum() == 4).all()  # 2 layers x attention, MLP: outermost each
    busy = s[(s["level"] == "step") & (s["key"] == "busy")].set_index("step")["time_ns"]
    cats = s[s["level"] == "category"].groupby("step")["time_ns"].sum()
    assert ((cats - busy).abs() <= 0.01 * busy).all()  # self times add up to the step
