"""Kernel categories on real kernel names, the rule order, and the "other" share per trace.

data/kernel_names.tsv: real kernel names with the category a reader of the kernel's source
would give it, and where each name comes from (the shared traces and Nsight exports, public
traces, or public code, issues and profiles; see data/kernel_names.md).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from perfkit.analyzers.categories import (
    CATEGORIES,
    COMPUTE_CATEGORIES,
    RULES,
    category_of,
    name_head,
)
from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.kernel_summary import category_summary, other_share_pct
from perfkit.analyzers.loaders.kineto.load import load_trace
from perfkit.analyzers.loaders.trace_files import load_trace_file

DATA = Path(__file__).parent / "data" / "kernel_names.tsv"
ROWS = list(csv.DictReader(DATA.open(newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))
BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench"
SHARED = BENCH / "traces"
# every real trace perfkit can read in ../shared/bench (Kineto traces, Nsight Systems exports)
BENCH_TRACES = sorted(["traces/" + p.name for p in SHARED.glob("*.json.gz")]
                      + ["nsys/" + p.name for p in (BENCH / "nsys").glob("*.sqlite")])
DOCS = Path(__file__).resolve().parents[2] / "docs" / "analyzers.md"


def test_table_is_large_and_sourced() -> None:
    assert len(ROWS) >= 300
    assert all(r["source"].strip() and r["name"].strip() for r in ROWS)
    assert {r["category"] for r in ROWS} == set(CATEGORIES)  # every category has real names
    assert len({r["name"] for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize(
    ("family", "needle", "at_least"),
    [  # the families issue 26 names, each with real names in the table
        ("DeepEP", "deep_ep::", 15), ("DeepSeek EP", "dpsk::ep::", 5), ("vLLM", "vllm", 15),
        ("SGLang", "sglang", 10), ("TensorRT-LLM", "tensorrt_llm", 15), ("FlashInfer", "flashinfer", 30),
        ("FlashAttention", "flash-attention", 4), ("cuDNN", "cudnn", 15), ("CUTLASS", "cutlass", 10),
        ("cuBLAS", "cublas", 5), ("hipBLASLt", "Cijk_", 3), ("CK", "composable_kernel", 3), ("aiter", "aiter", 40),
        ("Triton", "(Triton)", 60), ("Inductor", "triton_", 10), ("NCCL / RCCL", "ccl", 10),
        ("XLA", "fusion", 8), ("Transformer Engine", "TransformerEngine", 40),
        ("quantized GEMM", "marlin", 2), ("bitsandbytes", "bitsandbytes", 10),
        ("SageAttention", "SageAttention", 8), ("at::native", "at::native", 25),
    ],
)
def test_table_covers_family(family: str, needle: str, at_least: int) -> None:
    n = sum(needle.lower() in (r["name"] + " " + r["source"]).lower() for r in ROWS)
    assert n >= at_least, f"{family}: {n} names"


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{r['name'][:40]}" for i, r in enumerate(ROWS)])
def test_real_kernel_names(row: dict[str, str]) -> None:
    assert category_of(row["name"]) == row["category"], row["source"]


@pytest.mark.parametrize(
    ("name", "category"),
    [
        # the parameter list names argument types, not what the kernel does
        ("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, cudnn::reduced_divisor, int)", "conv"),
        ("void my_copy<float>(ncclDevComm*, float*)", "elementwise"),
        # nsys demangles enable_if return types: the kernel name comes after them
        ("std::enable_if<(T2>(int)0)&&vllm::_typeConvert<T1>::exists, void>::type "
         "vllm::fused_add_rms_norm_kernel<c10::BFloat16, (int)8>(T1 *, T1 *, const T1 *, float, int, int)", "norm"),
        # Inductor names list the ops they fuse; the prefix says what the kernel is
        ("triton_poi_fused_all_gather_into_tensor_copy_0", "elementwise"),
        ("triton_red_fused_native_layer_norm_0", "norm"),
        ("triton_tem_fused_mm_0", "GEMM"),
        # a gather that is not a collective
        ("void small_gather_kernel<float>(float*, long)", "elementwise"),
        ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
         "TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, 2>, float*>(float*)", "reduction"),
        ("void at::native::(anonymous namespace)::normal_kernel<float>(float*)", "other"),
    ],
)
def test_constructed_edge_cases(name: str, category: str) -> None:
    assert category_of(name) == category


def test_kind_decides_copies() -> None:
    assert category_of("Memcpy HtoD (Pinned -> Device)", int(Kind.MEMCPY)) == "memcpy"
    assert category_of("nccl_looking_name", int(Kind.MEMSET)) == "memset"


def test_every_rule_is_needed_and_documented() -> None:
    """Each rule decides at least one real name, and docs/analyzers.md lists it."""
    deciding = set()
    for row in ROWS:
        head = name_head(row["name"])
        for i, (_, pattern, _) in enumerate(RULES):
            if pattern.search(head):
                deciding.add(i)
                break
    unused = [RULES[i][2] for i in range(len(RULES)) if i not in deciding]
    assert not unused, unused  # every rule decides at least one real name
    docs = DOCS.read_text()
    for _, _, what in RULES:
        assert what in docs, f"docs/analyzers.md does not list the rule '{what}'"


@pytest.mark.parametrize(
    ("name", "category"),
    [  # issue 26: each of these was counted in the wrong category
        ("void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*)", "communication"),
        ("SubTensorOpWithScalar1d", "elementwise"),
        ("kernel_grouped_conv_fwd_xdl_cshuffle_v3<ck::GridwiseGemmMultiD_xdl_cshuffle_v3<ck::half_t>>", "conv"),
        ("void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<float, cutlass::bfloat16_t>", "moe_routing"),
        ("sage_fwd_mxfp4", "attention"),
        ("void cudnn::cnn::im2col4d_kernel<float, long>(cudnn::cnn::im2col4d_params)", "conv"),
        ("void flip_filter<float, float>(float*, float const*, int, int, int, int)", "conv"),
        ("void cuda::swiglu_backward<__nv_bfloat16>(void const*, void const*, void*, int, int)", "elementwise"),
        ("store_kvcache_kernel", "kv_cache"),
        ("_moe_align_block_size_stage3_kernel", "moe_routing"),
        # a GEMM library's namespace does not make a MoE helper a GEMM, nor an EP scatter attention
        ("void tensorrt_llm::kernels::cutlass_kernels::doActivationKernel<cutlass::bfloat16_t>", "elementwise"),
        ("_fwd_kernel_ep_scatter_1", "moe_routing"),
        ("_fwd_kernel_stage1", "attention"),
        # a fused kernel goes to its main op: norm or activation before the quantization it ends with
        ("_fused_rms_fp8_group_quant_kernel", "norm"),
        ("_silu_and_mul_post_quant_kernel", "elementwise"),
        ("per_token_group_quant_8bit", "quantize"),
        # "conv" but not "convert"
        ("void tensorrt_llm::common::cudaD2DcpyConvert<float, half>", "elementwise"),
    ],
)
def test_issue_26_names(name: str, category: str) -> None:
    assert category_of(name) == category


def test_new_categories_count_as_compute() -> None:
    assert {"moe_routing", "quantize", "kv_cache"} <= COMPUTE_CATEGORIES
    assert "communication" not in COMPUTE_CATEGORIES


def test_summary_always_shows_other(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.kernel("ampere_sgemm_128x64_nn", 0, 1, 2, 30)
    t.kernel("some_unknown_kernel", 10, 1, 40, 10)
    table = load_trace(t.write(tmp_path / "k.json"))
    cats = category_summary(table).set_index("category")
    assert cats.loc["other", "total_ns"] == 10_000
    assert other_share_pct(table) == pytest.approx(25.0)
    t2 = kineto()
    t2.kernel("ampere_sgemm_128x64_nn", 0, 1, 2, 30)
    known = load_trace(t2.write(tmp_path / "k2.json"))
    cats2 = category_summary(known).set_index("category")
    assert cats2.loc["other", "count"] == 0 and cats2.loc["other", "share_pct"] == 0.0
    assert other_share_pct(known) == 0.0


# "other" share of GPU op time per shared trace, as docs/analyzers.md states it (percent)
OTHER_SHARE = {
    "hta_cp_alexnet_a100.json.gz": 0.0,
    "hta_df_index_resolver_v100.json.gz": 0.0,
    "hta_nccl_data_a100.json.gz": 0.0,
    "hta_negqueue_rank0_a100.json.gz": None,  # old Inductor names (triton__0d1d2d...) say nothing
    "hta_ns_resolution_v100.json.gz": 0.0,
}


@pytest.mark.parametrize("name", sorted(OTHER_SHARE))
def test_other_share_on_shared_traces(name: str) -> None:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    table = load_trace(path)
    share = other_share_pct(table)
    cats = category_summary(table).set_index("category")
    assert cats.loc["other", "share_pct"] == pytest.approx(share)
    doc = re.search(rf"\| {re.escape(name.removesuffix('.json.gz'))} \| ([0-9.]+)% \|", DOCS.read_text())
    assert doc is not None, f"docs/analyzers.md has no other-share row for {name}"
    assert float(doc.group(1)) == pytest.approx(share, abs=0.01)
    if OTHER_SHARE[name] is not None:
        assert share == OTHER_SHARE[name]
    else:
        assert 0 < share < 5


@pytest.mark.slow
@pytest.mark.parametrize("rel", BENCH_TRACES or ["(none)"])
def test_other_at_most_5_pct_on_every_bench_trace(rel: str) -> None:
    """Issue 26: at most 5% of GPU op time is "other" on every real trace in ../shared/bench."""
    path = BENCH / rel
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    share = other_share_pct(load_trace_file(path))
    assert 0.0 <= share <= 5.0, f"{rel}: other {share:.2f}%"
