"""Kernel categories from kernel names (CUDA, ROCm, Triton, cuBLAS / hipBLASLt, NCCL / RCCL).

A name is matched without its parameter list (`(float*, cudnn::reduced_divisor, ...)` names
argument types, not what the kernel does) on its first MATCH_CHARS characters: the return
type, the qualified function name and its first template arguments (functors, CUTLASS and
CK kernel classes). `RULES` runs once per unique name, in order, first match wins; the order
matters: Inductor's `triton_poi_*` names list every op they fuse (`..._add_all_reduce_0` is a
local add), KV-cache writes mention `flash` / `mla`, cuDNN convolutions mention `gemm` and
`relu`, XLA / Inductor fusion prefixes decide before the op names they list, MoE routing
kernels live in TensorRT-LLM's `cutlass_kernels::`, and a fused kernel goes to its main op
(norm, then activation, before the quantization it ends with). Unmatched names are "other".
`COMPUTE_CATEGORIES` are what the temporal breakdown and overlap count as compute (every
category but memcpy, memset, communication). docs/analyzers.md ("Kernel categories") says what
each category contains and lists the rules as a table; tests/analyzers/data/kernel_names.tsv
holds the real names they are checked on.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.regex_literals import required_literals

CATEGORIES = (
    "GEMM",
    "conv",
    "attention",
    "norm",
    "elementwise",
    "reduction",
    "moe_routing",
    "quantize",
    "kv_cache",
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
    # XLA: <kind>_<root op>_fusion[.n]; the kind says what the kernel does
    ("GEMM", _rx(r"^(triton_gemm|gemm_fusion|cublas_gemm|cutlass_gemm)"), "XLA GEMM fusions (Triton, cuBLAS, CUTLASS)"),
    ("reduction", _rx(r"^(input|loop)_\w*(reduce|reduction)\w*fusion|^(input_)?reduce\w*_fusion"),
     "XLA reduction fusions"),
    ("elementwise", _rx(r"^(loop|input)_\w*fusion|^wrapped_|^fusion([._]\d+)*$|^copy_fusion"),
     "XLA loop / transpose / concatenate fusions and wrapped ops"),
    # PyTorch's generic templates: their functor arguments must not decide
    ("elementwise", _rx(r"(^|[\s:]|_scatter_gather_)(vectorized_|unrolled_)?elementwise_kernel(_with_index|_manual_unroll)?\b"),
     "at::native elementwise kernels"),
    ("reduction", _rx(r"(^|[\s:])reduce_kernel\b|multi_tensor_apply_kernel<.*LpNorm"),
     "at::native reduce_kernel, foreach norms"),
    ("elementwise", _rx(r"multi_tensor_apply_kernel"), "foreach ops, fused optimizers"),
    # collectives: NCCL / RCCL / MSCCL by prefix, custom all-reduce and expert-parallel kernels by name
    ("communication", _rx(r"^(void )?(nccl|rccl|msccl)|onerank_cu_\w*oneRankReduce"),
     "ncclDevKernel_*, ncclKernel_*, RCCL, MSCCL; NCCL's one-rank reduce (onerank.cu: an AVG / PreMulSum on one rank)"),
    ("communication",
     _rx(r"cross_device_reduce|(?<![a-z])(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all)"
         r"|All(Reduce|Gather|ToAll)|ReduceScatter|quickreduce|lamport|deep_ep::|dpsk::ep::"
         r"|(intra|inter)node(_ll)?::|nvshmem|moeA2A|userbuffers", 0),
     "custom all-reduce (vLLM, SGLang, TensorRT-LLM, c10d symmetric memory), DeepEP, userbuffers"),
    ("kv_cache",
     _rx(r"reshape_and_cache|(concat|cat)_and_cache|store_?kv_?cache|copy_to_kv_cache|UpdateKVCache"
         r"|reindex_kv_cache|cache_kernel|kv_indices|req_to_token|copy_blocks|swap_blocks|set_kv_buffer"),
     "KV-cache writes, block copies and page-table builders"),
    ("attention",
     _rx(r"flash_(fwd|bwd)|flash::|FlashAttn|fmha|attention|attn|sdpa|mmha|(?<![a-z])mha|_mha"
         r"|xformers|PrefillWith|DecodeWith|MergeStates|PageAttention|(?<![a-z])mla_|_mla"
         r"|^_fwd_(grouped_)?kernel(?!_ep_)|^_bwd_kernel|chunked_prefill|paged_decode|xqa|sage_fwd"
         r"|delta_rule|selective_state|selective_scan|chunk_gla|_kda_"),
     "FlashAttention 2/3, FlashInfer, xFormers, TensorRT-LLM FMHA/XQA, SageAttention, Triton, linear attention"),
    ("conv",
     _rx(r"conv(?!ert|ersion)|depthwise|scudnn|implicit_?gemm|fprop|dgrad|wgrad"
         r"|winograd|fft2d_(r2c|c2r)|cask_cudnn|igemm_(fwd|bwd|wrw)|im2col|col2im|flip_filter"),
     "cuDNN / MIOpen / CK convolutions and their helpers"),
    ("moe_routing",
     _rx(r"moe_?align|align_block_size|MoeRouting|routingIndices|routingMain|moe_?(un)?permute"
         r"|(?<![a-z])(un)?permute_(kernel|bwd)|expandInputRows|finalizeMoe|finalizeDeepSeek"
         r"|topkGating|topk_?softmax|moe_sum|moe_topk|moe_fused_gate|grouped_topk|deepseek_v3_topk"
         r"|fused_topk|ExpertPrefixSum|ExpertMap|count_and_sort_expert|count_expert|expert_?(ids|offsets)"
         r"|(pre|post)_reorder|src2dst|deepep_permute|ep_scatter|ep_gather|seg_indptr|row_id_map|sort_chunks_by_map"
         r"|chunk_sort_map|moe_aux_loss|score_for_moe|_routing|expt_data|moe_routing"),
     "MoE routing: top-k gating, align / sort by expert, permute / unpermute, finalize"),
    ("GEMM",
     _rx(r"(?<!fb)gemm|gemv|matmul|(?<![a-z])mm_|_mm(?![a-z])|bmm|cutlass(?!_kernels::|::(bfloat16_t|half_t|float_e\w+|tfloat32_t))|cublas|Cijk_|nvjet|xmma"
         r"|wgmma|splitKreduce|marlin|machete|wvSplitK|magma_|hipblaslt|rocblas|(?<![a-z])_?gmm"
         r"|bgmv|sgmv|mfma_moe|flatmm|fused_moe|w8a8|a8w8|(^|\s)epilogue::impl"),
     "cuBLAS (sm90_xmma, nvjet), CUTLASS, hipBLASLt / rocBLAS (Cijk_), ROCm skinny, MoE and LoRA GEMMs"),
    ("norm",
     _rx(r"norm(?!al)|bn_fw|bn_bw|GammaBeta|RowwiseMoments|ComputeFusedParams|(^|[\s:_])(ln|rms)_"),
     "RMSNorm, LayerNorm, BatchNorm, GroupNorm"),
    ("elementwise",
     _rx(r"act_and_mul|activation|silu|swiglu|geglu|gelu|relu|sigmoid|swish|softplus"),
     "activations, also fused with a quantization"),
    ("quantize",
     _rx(r"quant|fp8|fp4|cast_transpose|_cast_and_transpose|cast_back|mxfp[48]"
         r"|nvfp4|amax|2fp8|fp82|block_scale_interleave|swizzle_\w*scaling"),
     "quantize / dequantize, casts to and from FP8 / FP4 with their scales"),
    ("reduction",
     _rx(r"reduce|reduction|softmax|argmax|argmin|topk|top_k|cumsum|scan|logsumexp|sampling|sort"
         r"|histogram|max_pool|avg_pool|average_pool|maxpool|avgpool|nll_loss|cross_entropy"
         r"|(^|[\s:])(cub|hipcub|rocprim|thrust)::|bincount"),
     "reductions, softmax, top-k, sampling, sort / scan, pooling"),
    ("elementwise",
     _rx(r"elementwise|pointwise|vectorized|unrolled|tanh|rotary|rope|copy|fill|cat_?array|index|indices"
         r"|gather|scatter|embedding|where|clamp|cast|convert|transpose|permute|arange|dropout|distribution"
         r"|nchwToNhwc|nhwcToNchw|scalePacked|upsample|masked_fill|expand|bucketize|penalt|padding"
         r"|SubTensorOp|Op[1-5]dTensor|optimizer|adam"),
     "copies, casts, gathers, embeddings, RoPE, optimizers, MIOpen tensor ops"),
)



def _literal_rx(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """One search for any of the rule's required literals in a lowercased name (None: no prefilter)."""
    literals = required_literals(pattern)
    return None if literals is None else re.compile("|".join(re.escape(s) for s in literals))


@cache
def _prefiltered() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...]:
    """Each rule with a search for the lowercase literals one of which a name must hold for it to
    match; derived on the first categorisation (parsing every rule's regex), not at import."""
    return tuple((category, pattern, _literal_rx(pattern)) for category, pattern, _ in RULES)
_PARENS = re.compile(r"[()]")


def name_head(name: str) -> str:
    """The name without a trailing parameter list, cut to MATCH_CHARS characters."""
    if name.endswith(")"):
        depth = 0
        for m in reversed(list(_PARENS.finditer(name))):  # the parentheses only, last first
            depth += 1 if m.group() == ")" else -1
            if depth == 0:
                if m.start() > 0:
                    name = name[: m.start()]
                break
    return name[:MATCH_CHARS]


def category_of(name: str, kind: int = int(Kind.KERNEL)) -> str:
    """The category of one GPU op (memcpy / memset by kind first, then the first matching rule).

    On an ASCII name a rule is searched only when the name holds one of its required literals
    (`_prefiltered()`, from analyzers.regex_literals): a rule whose literals are all absent cannot
    match, so the first match is the same as searching every rule in order."""
    if kind == Kind.MEMCPY:
        return "memcpy"
    if kind == Kind.MEMSET:
        return "memset"
    head = name_head(name)
    if head.isascii():
        low = head.lower()
        for category, pattern, literals in _prefiltered():
            if literals is not None and not literals.search(low):
                continue
            if pattern.search(head):
                return category
        return "other"
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
