"""Kernel categories from kernel names (CUDA, ROCm, Triton, cuBLAS / hipBLASLt, NCCL / RCCL).

Rules run once per unique name, first match wins, in this order:
memcpy / memset (by event kind or name), communication, attention, GEMM, norm, reduction,
elementwise, other. `COMPUTE_CATEGORIES` are what the temporal breakdown counts as compute.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

from analyzers.event_table import EventTable, Kind

CATEGORIES = (
    "GEMM",
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

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("memcpy", re.compile(r"^memcpy|^dma|memcpy ?(htod|dtoh|dtod|ptop|peer)", re.I)),
    ("memset", re.compile(r"^memset", re.I)),
    (
        "communication",
        re.compile(
            r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall|sendrecv"
            r"|cross_device_reduce|custom_?ar|one_?shot|two_?shot|multimem|nvshmem|deep_?ep"
            r"|c10d|gloo",
            re.I,
        ),
    ),
    (
        "attention",
        re.compile(
            r"flash|fmha|attention|attn|sdpa|paged_?att|mha_|_mha|xformers|flashinfer|"
            r"decode_?kernel.*kv|mla_|_mla|fused_?mha|cudnn.*(sdpa|mha)|ck_tile.*fmha|unified_attention",
            re.I,
        ),
    ),
    (
        "GEMM",
        re.compile(
            r"gemm|gemv|matmul|sgemm|hgemm|dgemm|cutlass|cublas|cijk_|nvjet|xmma|wgmma|s884|s1688|"
            r"h884|h1688|h16816|s16816|splitkreduce|triton_tem_fused_.*mm|_mm_|\bmm\b|bmm|"
            r"^ampere_|^volta_|^turing_|^sm\d+_xmma|marlin|machete|scaled_mm|fp8_.*mm|tensorop",
            re.I,
        ),
    ),
    ("norm", re.compile(r"norm|bn_fw|bn_bw|batchnorm|rms_?norm|layer_?norm|welford", re.I)),
    (
        "reduction",
        re.compile(
            r"reduce|reduction|softmax|argmax|argmin|topk|top_k|cumsum|scan|triton_red_|"
            r"triton_per_|sum_kernel|mean_kernel|max_kernel|logsumexp|sampling|sort",
            re.I,
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"elementwise|pointwise|triton_poi_|vectorized|unrolled|act_and_mul|silu|gelu|relu|"
            r"rotary|rope|copy|fill|cat_?array|catarray|index|gather|scatter|embedding|where|"
            r"clamp|add_kernel|mul_kernel|cast|convert|transpose|permute|cache_kernel|"
            r"reshape_and_cache|bitonic|arange|dropout|distribution",
            re.I,
        ),
    ),
)


def category_of(name: str, kind: int = int(Kind.KERNEL)) -> str:
    """The category of one kernel (first matching rule; memcpy / memset by kind first)."""
    if kind == Kind.MEMCPY:
        return "memcpy"
    if kind == Kind.MEMSET:
        return "memset"
    for category, pattern in _RULES:
        if pattern.search(name):
            return category
    return "other"


def categorize(table: EventTable, rows: npt.NDArray[Any]) -> npt.NDArray[np.object_]:
    """Category per row (rows: indices into `table`), computed once per (name, kind)."""
    name_id = table["name_id"][rows].astype(np.int64)
    kind = table["kind"][rows].astype(np.int64)
    key = name_id * 16 + kind
    uniq, inverse = np.unique(key, return_inverse=True)
    cats = np.asarray(
        [category_of(table.names[int(k) // 16], int(k) % 16) for k in uniq], dtype=object
    )
    return cats[inverse] if len(uniq) else np.empty(0, dtype=object)


def compute_mask(categories: npt.NDArray[np.object_]) -> npt.NDArray[np.bool_]:
    return ~np.isin(categories, list(NON_COMPUTE_CATEGORIES))
