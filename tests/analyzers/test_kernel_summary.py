"""Kernel summary and categories: exact totals, percentiles, shares, graph counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.categories import category_of
from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.kernel_summary import category_summary, kernel_summary
from perfkit.analyzers.loaders.kineto.load import load_trace


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("ampere_sgemm_128x64_nn", "GEMM"),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>(Params)", "GEMM"),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "GEMM"),
        ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", "GEMM"),
        ("triton_tem_fused_mm_0", "GEMM"),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)", "attention"),
        ("void vllm::paged_attention_v2_kernel<half, 128>", "attention"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "norm"),
        ("void vllm::rms_norm_kernel<c10::BFloat16>", "norm"),
        ("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0", "reduction"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduction"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "elementwise"),
        ("triton_poi_fused_add_0", "elementwise"),
        ("void vllm::act_and_mul_kernel<c10::BFloat16>", "elementwise"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", "communication"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("void vllm::cross_device_reduce_1stage<half, 8>", "communication"),
        ("triton__0d1d2d", "other"),
    ],
)
def test_categories(name: str, category: str) -> None:
    assert category_of(name) == category


def test_memcpy_memset_by_kind() -> None:
    assert category_of("Memcpy HtoD (Pinned -> Device)", int(Kind.MEMCPY)) == "memcpy"
    assert category_of("Memset (Device)", int(Kind.MEMSET)) == "memset"


def test_summary_is_exact(kineto, tmp_path: Path) -> None:
    t = kineto()
    durations = {"gemm_a": [10.0, 20.0, 30.0, 40.0], "elementwise_b": [1.5, 2.5], "Memcpy DtoD (Device -> Device)": [7.25]}
    ts = 0.0
    for name, durs in durations.items():
        for d in durs:
            cat = "gpu_memcpy" if name.startswith("Memcpy") else "kernel"
            t.kernel(name, ts, 1, ts + 2, d, cat=cat)
            ts += 100
    corr = t.launch(ts, 5, "cudaGraphLaunch")
    t.gpu("gemm_a", ts + 10, 50, corr)
    table = load_trace(t.write(tmp_path / "k.json"))
    ks = kernel_summary(table).set_index("name")
    assert ks.loc["gemm_a", "count"] == 5
    assert ks.loc["gemm_a", "total_ns"] == 150_000
    assert ks.loc["gemm_a", "graph_count"] == 1
    assert ks.loc["gemm_a", "p50_ns"] == np.percentile([10e3, 20e3, 30e3, 40e3, 50e3], 50)
    assert ks.loc["gemm_a", "p95_ns"] == pytest.approx(np.percentile([10e3, 20e3, 30e3, 40e3, 50e3], 95))
    assert ks.loc["gemm_a", "category"] == "GEMM"
    assert ks.loc["elementwise_b", "mean_ns"] == 2000
    assert ks.loc["Memcpy DtoD (Device -> Device)", "kind"] == "memcpy"
    assert ks["share_pct"].sum() == pytest.approx(100.0)
    assert list(ks.index) == ["gemm_a", "Memcpy DtoD (Device -> Device)", "elementwise_b"]
    cats = category_summary(table).set_index("category")
    assert cats.loc["GEMM", "total_ns"] == 150_000 and cats.loc["memcpy", "count"] == 1


def test_by_rank_and_empty(kineto, tmp_path: Path) -> None:
    t = kineto()
    t.cpu("aten::add", 0, 5)
    table = load_trace(t.write(tmp_path / "cpu.json"))
    assert kernel_summary(table).empty
    assert "rank" in kernel_summary(table, by_rank=True).columns
    assert category_summary(table).empty
