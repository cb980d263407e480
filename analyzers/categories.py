"""Kernel categories from kernel names (CUDA, ROCm, Triton, cuBLAS / hipBLASLt, NCCL / RCCL).

A name is matched without its parameter list (`(float*, cudnn::reduced_divisor, ...)` names
argument types, not what the kernel does) on its first MATCH_CHARS characters: the return
type, the qualified function name and its first template arguments (functors, CUTLASS and
CK kernel classes). `RULES` runs once per unique name, in order, first match wins; the order
matters: Inductor's `triton_poi_*` names list every op they fuse (`..._add_all_reduce_0` is a
local add), KV-cache writes mention `flash` / `mla`, cuDNN convolutions mention `gemm` and
`relu`. Unmatched names are "other". `COMPUTE_CATEGORIES` are what the temporal breakdown
counts as compute. docs/analyzers.md ("Kernel categories") lists the rules as a table.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind

CATEGORIES = (
    "GEMM",
    "conv",
    "attention",
    "norm",
    "elementwise",
    "reduction",
    "memcpy",
    "memset",
    "communication",
    "other",
)
NON_COMPUTE_CATEGORIES = frozenset({"memcpy", "memset", "communication"})
COMPUTE_CATEGORIES = frozenset(c for c in CATEGORIES if c not in NON_COMPUTE_CATEGORIES)

MATCH_CHARS = 512  # kernel names can run to kilobytes of template arguments


def _rx(pattern: str, flags: int = re.I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# (category, pattern, what it is for); searched in the name without its parameter list.
RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("memcpy", _rx(r"^memcpy|^__amd_rocclr_copy|^dma"), "copy engines, ROCm copy kernels"),
    ("memset", _rx(r"^memset|^__amd_rocclr_fill"), "ROCm fill kernels"),
    # Inductor: triton_<kind>_fused_<ops>_<n>; the kind says what the kernel does
    ("elementwise", _rx(r"^triton_(poi|for)_"), "Inductor pointwise / foreach, whatever it fuses"),
    ("attention", _rx(r"^triton_tem_\w*flex_attention"), "Inductor flex-attention template"),
    ("conv", _rx(r"^triton_tem_\w*convolution"), "Inductor convolution template"),
    ("GEMM", _rx(r"^triton_tem_"), "Inductor mm / bmm / addmm templates"),
    ("norm", _rx(r"^triton_(red|per)_\w*(rms_?norm|layer_?norm|group_?norm|batch_?norm)"),
     "Inductor reduction fusing a named norm"),
    ("reduction", _rx(r"^triton_(red|per)_"), "Inductor reductions"),
    # PyTorch's generic templates: their functor arguments must not decide
    ("elementwise", _rx(r"(^|[\s:])(vectorized_|unrolled_)?elementwise_kernel(_with_index|_manual_unroll)?\b"),
     "at::native elementwise kernels"),
    ("reduction", _rx(r"(^|[\s:])reduce_kernel\b|multi_tensor_apply_kernel<.*LpNorm"),
     "at::native reduce_kernel, foreach norms"),
    ("elementwise", _rx(r"multi_tensor_apply_kernel"), "foreach ops, fused optimizers"),
    # collectives: NCCL / RCCL / MSCCL by prefix, custom all-reduce kernels by name
    ("communication", _rx(r"^(void )?(nccl|rccl|msccl)"), "ncclDevKernel_*, ncclKernel_*, RCCL, MSCCL"),
    ("communication",
     _rx(r"cross_device_reduce|(?<![a-z])(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all)"
         r"|All(Reduce|Gather|ToAll)|ReduceScatter|quickreduce|lamport|deep_ep::|nvshmem", 0),
     "custom all-reduce (vLLM, SGLang, TensorRT-LLM, c10d symmetric memory), DeepEP"),
    ("elementwise", _rx(r"reshape_and_cache|concat_and_cache|cache_kernel|UpdateKVCache|kv_indices"
                        r"|req_to_token|copy_blocks|swap_blocks"), "KV-cache writes and index builders"),
    ("attention",
     _rx(r"flash_(fwd|bwd)|flash::|FlashAttn|fmha|attention|attn|sdpa|mmha|(?<![a-z])mha|_mha"
         r"|xformers|PrefillWith|DecodeWith|MergeStates|PageAttention|(?<![a-z])mla_|_mla"
         r"|^_fwd_(grouped_)?kernel|^_bwd_kernel|chunked_prefill|paged_decode|xqa"),
     "FlashAttention 2/3, FlashInfer, xFormers, TensorRT-LLM FMHA/XQA, Triton attention"),
    ("conv",
     _rx(r"convolution|convolve|conv_?[123]d|depthwise|scudnn|implicit_?gemm|fprop|dgrad|wgrad"
         r"|winograd|fft2d_(r2c|c2r)|cask_cudnn|igemm_(fwd|bwd|wrw)|naive_conv|MIOpenConv"),
     "cuDNN / MIOpen convolutions and their helpers"),
    ("GEMM",
     _rx(r"(?<!fb)gemm|gemv|matmul|(?<![a-z])mm_|_mm(?![a-z])|bmm|cutlass|cublas|Cijk_|nvjet|xmma"
         r"|wgmma|splitKreduce|marlin|machete|tensorop|wvSplitK|magma_|hipblaslt|rocblas"
         r"|mfma_moe|flatmm|fused_moe|w8a8|a8w8|(^|\s)epilogue::impl"),
     "cuBLAS (sm90_xmma, nvjet), CUTLASS, hipBLASLt / rocBLAS (Cijk_), ROCm skinny, MoE GEMMs"),
    ("norm",
     _rx(r"norm(?!al)|bn_fw|bn_bw|GammaBeta|RowwiseMoments|ComputeFusedParams"),
     "RMSNorm, LayerNorm, BatchNorm, GroupNorm"),
    ("reduction",
     _rx(r"reduce|reduction|softmax|argmax|argmin|topk|top_k|cumsum|scan|logsumexp|sampling|sort"
         r"|histogram|max_pool|avg_pool|average_pool|maxpool|avgpool|nll_loss|cross_entropy"
         r"|(^|[\s:])(cub|hipcub|rocprim|thrust)::|MoeRouting|moe_sum|align_block_size|bincount"),
     "reductions, softmax, top-k, sampling, sort / scan, pooling"),
    ("elementwise",
     _rx(r"elementwise|pointwise|vectorized|unrolled|act_and_mul|silu|gelu|relu|sigmoid|tanh|rotary"
         r"|rope|copy|fill|cat_?array|index|indices|gather|scatter|embedding|where|clamp|cast|convert"
         r"|transpose|permute|arange|dropout|distribution|quant|nchwToNhwc|nhwcToNchw|scalePacked"
         r"|upsample|masked_fill|expand|bucketize|penalt"),
     "activations, copies, casts, gathers, embeddings, quantization"),
)


def name_head(name: str) -> str:
    """The name without a trailing parameter list, cut to MATCH_CHARS characters."""
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            c = name[i]
            depth += c == ")"
            depth -= c == "("
            if depth == 0:
                if i > 0:
                    name = name[:i]
                break
    return name[:MATCH_CHARS]


def category_of(name: str, kind: int = int(Kind.KERNEL)) -> str:
    """The category of one GPU op (memcpy / memset by kind first, then the first matching rule)."""
    if kind == Kind.MEMCPY:
        return "memcpy"
    if kind == Kind.MEMSET:
        return "memset"
    head = name_head(name)
    for category, pattern, _ in RULES:
        if pattern.search(head):
            return category
    return "other"


def categorize(table: EventTable, rows: npt.NDArray[Any]) -> pd.Categorical[str]:
    """Category per row (rows: indices into `table`), computed once per (name, kind)."""
    key = table["name_id"][rows].astype(np.int64)
    key *= 16
    key += table["kind"][rows]
    inverse, uniq = pd.factorize(key)  # hashing: no sorted copies of the rows
    del key
    index = {c: i for i, c in enumerate(CATEGORIES)}
    codes = np.asarray([index[category_of(table.names[int(k) // 16], int(k) % 16)] for k in uniq], dtype=np.int8)
    return pd.Categorical.from_codes(codes[inverse] if len(uniq) else np.empty(0, np.int8), categories=pd.Index(list(CATEGORIES)))


def compute_mask(categories: Any) -> npt.NDArray[np.bool_]:
    """True where the category counts as compute (a Categorical, Series or array of names)."""
    values = categories.array if isinstance(categories, pd.Series) else categories
    if isinstance(values, pd.Categorical):
        lut = np.asarray([c not in NON_COMPUTE_CATEGORIES for c in values.categories] + [False])
        return lut[values.codes]
    return ~np.isin(np.asarray(values, dtype=object), list(NON_COMPUTE_CATEGORIES))
