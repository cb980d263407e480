"""`perfkit replay` per op class, from real traces: attention (an H100 trace of Qwen1.5-0.5B, vLLM
traces, perfkit's decoder), norms (a B200 vLLM trace, the decoder), MoE (perfkit's tiny-moe
decoder; vLLM's moe_forward), elementwise ops (FILL). Each written spec is loaded by the spec
loader; the runnable ones run through `perfkit profile` on CPU; the FILL ones are refused naming
the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from perfkit.commands.replay import spec_text
from perfkit.core.errors import SpecError
from perfkit.pipeline.spec import load_spec
from tests.helpers.forked_cli import run_perfkit

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
DECODER, MOE = DATA / "perfkit" / "tiny_eager.json.gz", DATA / "perfkit" / "tiny_moe_eager.json.gz"
QWEN = DATA / "tracelens" / "h100_qwen15_05b_chat.json.gz"  # H100, SDPA [16, 16, 559, 64] bf16 causal
B200 = DATA / "tracelens" / "b200_eager_tp8_rank0.json.gz"  # vLLM gpt-oss on a B200, TP 8
VLLM = DATA / "tracelens" / "vllm_prefilldecode_piecewise.json.gz"


def _write(tmp_path: Path, trace: Path, name: str, kernel: bool = False) -> tuple[Path, str, dict]:  # type: ignore[type-arg]
    text = spec_text(str(trace), name, kernel=kernel, device="cpu")
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return path, text, yaml.safe_load(text)["workloads"][0]


def _profile(spec: Path) -> dict:  # type: ignore[type-arg]
    p = run_perfkit(["profile", spec.name, "--out", "runs", "--no-store", "--quiet", "--quick", "--no-analyze"],
                    spec.parent)
    assert p.returncode == 0, p.stderr
    run = json.loads(next((spec.parent / "runs").glob("*/run.json")).read_text())
    assert run["points"][0]["status"] == "ok", run["points"][0]
    return run["points"][0]["params"]  # type: ignore[no-any-return]


def _refused(spec: Path, field: str) -> None:
    p = run_perfkit(["profile", spec.name, "--no-store", "--quick", "--out", "runs"], spec.parent)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "model.yaml:" in p.stderr and f"'{field}' is FILL" in p.stderr


@pytest.mark.slow
def test_attention_of_a_real_h100_trace_has_its_input_dims(tmp_path: Path) -> None:
    """Too big for a CPU run (16 x 16 heads x 559^2 in bf16): the fields equal the op's Input Dims,
    by the op and by the flash kernel it launched ([B, S, H, D] there)."""
    path, _, e = _write(tmp_path, QWEN, "aten::scaled_dot_product_attention")
    assert (e["kind"], e["phase"], e["batch"], e["seq_len"], e["num_heads"], e["num_kv_heads"], e["head_dim"],
            e["causal"], e["dtypes"], e["backend"]) == (
        "attention", ["prefill"], [16], [559], [16], [16], [64], [True], ["bf16"], ["auto"])
    assert load_spec(path).points()[0].params["seq_len"] == 559
    kernel = next(n for n in json.loads(__import__("gzip").open(QWEN).read())["traceEvents"]
                  if n.get("cat") == "kernel" and "flash_fwd_kernel" in n["name"])["name"]
    _, text, k = _write(tmp_path, QWEN, kernel, kernel=True)
    assert "# aten::_flash_attention_forward:" in text
    assert {f: k[f] for f in ("batch", "seq_len", "num_heads", "head_dim", "causal")} == {
        "batch": [16], "seq_len": [559], "num_heads": [16], "head_dim": [64], "causal": [True]}
    assert k["backend"] == ["flash"]


@pytest.mark.slow
def test_attention_range_of_the_decoder_runs_with_its_shapes(tmp_path: Path) -> None:
    """perfkit serve's `perfkit_attention` range: its SDPA call (decode: q [4, 2, 2, 16] against a
    256-slot cache) runs alone through perfkit profile."""
    path, text, e = _write(tmp_path, DECODER, "perfkit_attention")
    assert "its attention op aten::scaled_dot_product_attention" in text and "FILL" not in text
    assert (e["phase"], e["batch"], e["seq_len"], e["query_len"], e["num_heads"], e["num_kv_heads"], e["head_dim"]) \
        == (["decode"], [4], [256], [2], [2], [2], [16])
    params = _profile(path)
    assert (params["context"], params["query_len"], params["num_heads"], params["batch"]) == (256, 2, 2, 4)


@pytest.mark.slow
def test_norm_of_a_real_vllm_trace_runs_on_cpu(tmp_path: Path) -> None:
    """vLLM's `_C::fused_add_rms_norm` [888, 2880] bf16 on a B200 -> kernels add_rmsnorm, run on CPU."""
    path, _, e = _write(tmp_path, B200, "_C::fused_add_rms_norm")
    assert (e["kind"], e["op"], e["tokens"], e["hidden"], e["dtypes"]) == ("kernels", ["add_rmsnorm"], [888], [2880], ["bf16"])
    params = _profile(path)
    assert (params["op"], params["tokens"], params["hidden"], params["dtype"]) == ("add_rmsnorm", 888, 2880, "bf16")


@pytest.mark.slow
def test_rms_norm_of_the_decoder_is_the_most_frequent_shape(tmp_path: Path) -> None:
    _, text, e = _write(tmp_path, DECODER, "aten::rms_norm")
    assert (e["op"], e["tokens"], e["hidden"], e["dtypes"]) == (["rmsnorm"], [4], [64], ["fp32"])  # decode [4, 1, 64]
    assert "41 of 45 calls" in text


@pytest.mark.slow
def test_moe_range_of_the_tiny_moe_decoder_runs(tmp_path: Path) -> None:
    """tiny-moe: 4 experts of width 96, top-2, one shared expert of width 96; decode steps run dense."""
    path, text, e = _write(tmp_path, MOE, "perfkit_mlp")
    assert "FILL" not in text
    assert {f: e[f][0] for f in ("tokens", "dim", "expert_ffn_dim", "experts", "top_k", "shared_experts",
                                 "shared_ffn_dim", "impl", "dtypes")} == {
        "tokens": 4, "dim": 64, "expert_ffn_dim": 96, "experts": 4, "top_k": 2, "shared_experts": 1,
        "shared_ffn_dim": 96, "impl": "dense", "dtypes": "fp32"}
    params = _profile(path)
    assert (params["experts"], params["top_k"], params["expert_ffn_dim"], params["impl"]) == (4, 2, 96, "dense")


@pytest.mark.slow
def test_what_a_serving_engines_trace_does_not_say_is_fill_and_refused(tmp_path: Path) -> None:
    """vLLM's paged attention op carries heads but not the batch's sequences; its moe_forward the
    router logits but not the experts' width or top_k: those are FILL, named, and refused."""
    path, text, e = _write(tmp_path, VLLM, "vllm::unified_attention_with_output")
    assert (e["num_heads"], e["num_kv_heads"], e["head_dim"], e["dtypes"]) == ([64], [8], [64], ["bf16"])
    assert (e["phase"], e["batch"], e["seq_len"]) == ("FILL", "FILL", "FILL")
    assert "# FILL: fill `batch`" in text
    with pytest.raises(SpecError, match="'phase' is FILL"):
        load_spec(path)
    path, text, e = _write(tmp_path, B200, "vllm::moe_forward")
    assert (e["tokens"], e["dim"], e["experts"], e["expert_ffn_dim"], e["top_k"]) == ([888], [3072], [128], "FILL", "FILL")
    _refused(path, "expert_ffn_dim")


@pytest.mark.slow
def test_elementwise_op_is_kind_fill_naming_the_op(tmp_path: Path) -> None:
    path, text, e = _write(tmp_path, DECODER, "aten::silu")
    assert e["kind"] == "FILL" and "aten::silu(4x16x192) fp32: no workload kind runs this op" in text
    _refused(path, "kind")
