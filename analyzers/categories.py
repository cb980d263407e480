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
import pandas as pd

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
            r"flash|fmha|attention|attn|sdpa|paged_?att|mha_|_mha|xformers|flashinfer|mla_|_mla",
            re.I,
        ),
    ),
    (
        "GEMM",
        re.compile(
            r"gemm|gemv|matmul|sgemm|hgemm|dgemm|cutlass|cublas|cijk_|nvjet|xmma|wgmma|s884|s1688|"
            r"h884|h1688|h16816|s16816|splitkreduce|triton_tem_|_mm_|\bmm\b|bmm|"
            r"^ampere_|^volta_|^turing_|^hopper_|marlin|machete|scaled_mm|tensorop",
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


MATCH_CHARS = 512  # kernel names can run to kilobytes of template arguments


def category_of(name: str, kind: int = int(Kind.KERNEL)) -> str:
    """The category of one kernel (first matching rule; memcpy / memset by kind first).

    Rules look at the first MATCH_CHARS characters: the kernel's own name and its first
    template arguments (functor names), not the tail of long argument lists.
    """
    if kind == Kind.MEMCPY:
        return "memcpy"
    if kind == Kind.MEMSET:
        return "memset"
    head = name[:MATCH_CHARS]
    for category, pattern in _RULES:
        if pattern.search(head):
            return category
    return "other"


def categorize(table: EventTable, rows: npt.NDArray[Any]) -> pd.Categorical[str]:
    """Category per row (rows: indices into `table`), computed once per (name, kind)."""
    name_id = table["name_id"][rows].astype(np.int64)
    kind = table["kind"][rows].astype(np.int64)
    key = name_id * 16 + kind
    uniq, inverse = np.unique(key, return_inverse=True)
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
