"""Kernel base names and terminal labels: distinct names never look alike, whatever the width."""

from __future__ import annotations

import pytest

from perfkit.analyzers.collectives.kernels import collective_of
from perfkit.analyzers.name_labels import base_name, labels


@pytest.mark.parametrize(("name", "base"), [
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8>(cutlass_80_tensorop_"
     "bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8::Params)", "cutlass::Kernel2"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
     "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "at::native::vectorized_elementwise_kernel"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float>(float*, float const*, int)",
     "at::native::(anonymous namespace)::cunn_SoftMaxForward"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclKernel_AllReduce_RING_LL_Sum_float"),
    ("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pinned -> Device)"),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
     "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel"),
    ("aten::mm, op_id = 7", "aten::mm, op_id = 7"),
])  # fmt: skip
def test_base_name(name: str, base: str) -> None:
    assert base_name(name) == base


def test_distinct_names_get_distinct_labels_within_the_width() -> None:
    names = [f"void at::native::elementwise_kernel<{i}, Op{i}>(int, Op{i})" for i in range(12)]
    names += ["sm80_xmma_gemm_" + "x" * 60 + s for s in ("_tn", "_nt")]  # equal but for the end
    names += [names[0], "cutlass::Kernel2 [1]"]  # a repeat keeps its label; a name that looks like a label
    for width in (None, 8, 20, 40):
        for short in (False, True):
            got = labels(names, width, short)
            assert len(set(got)) == len(set(names))  # distinct names, distinct labels; equal names, equal labels
            assert got[0] == got[-2]
            if width is not None:
                assert max(map(len, got)) <= width
    shown = labels(names, 40, True)
    assert shown[:3] == ["at::native::elementwise_kernel [1]", "at::native::elementwise_kernel [2]",
                         "at::native::elementwise_kernel [3]"]


@pytest.mark.parametrize(("name", "expected"), [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", ("all_reduce", "bf16")),
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", ("all_gather", "int8")),
    ("ncclKernel_ReduceScatter_RING_SIMPLE_Sum_rccl_bfloat16", ("reduce_scatter", "bf16")),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", ("send_recv", "")),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", ("all_reduce", "")),
    ("void at::native::reduce_kernel<512, 1>(...)", ("", "")),
])  # fmt: skip
def test_collective_of_kernel_names(name: str, expected: tuple[str, str]) -> None:
    assert collective_of(name) == expected
