"""The category of an op or kernel name, the key two traces are aligned by when names differ.

GPU kernel names go by `perfkit.analyzers.categories` (GEMM, attention, norm, ...). CPU ops
(`aten::mm`) and Inductor's generated kernels (`triton_poi_fused_add_mul_0`,
`graph_0_cpp_fused_add_embedding_mean_mul_pow_rsqrt_0`: the aten ops they fuse are in the name)
go by the op they run: eager and torch.compile launch different kernels for the same aten ops,
and their categories line up where their names do not. Host-side work that moves no data
(views, dispatcher / Dynamo / AOT wrappers, Python between ops) is `host`.
"""

from __future__ import annotations

import re
from functools import cache

from perfkit.analyzers.categories import category_of

HOST = "host"
_FUSED = re.compile(r"(?:^|_)(?:cpp|triton_[a-z]+)_fused_(.*?)(?:_\d+)?$")
_GEMM = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_int_mm", "addmv", "mv", "dot",
                   "_scaled_mm", "einsum"})
_NORM = frozenset({"rms_norm", "_fused_rms_norm", "layer_norm", "native_layer_norm", "group_norm", "batch_norm"})
_VIEW = frozenset({"view", "_unsafe_view", "reshape", "transpose", "t", "permute", "expand", "as_strided", "slice",
                   "select", "unsqueeze", "squeeze", "detach", "detach_", "alias", "unbind", "split", "chunk",
                   "contiguous", "resolve_conj", "resolve_neg", "lift_fresh", "empty", "empty_like",
                   "empty_strided", "view_as_real", "view_as_complex", "flatten", "unflatten", "narrow",
                   "split_with_sizes", "lift_fresh_copy", "set_"})
_COPY = frozenset({"copy_", "to", "_to_copy", "clone", "cat", "stack", "zeros", "zeros_like", "fill_", "zero_",
                   "ones", "full"})
_KV = frozenset({"index_put", "index_put_", "_index_put_impl_", "index_copy_", "index_copy", "scatter_"})
_HOST_NAMES = re.compile(r"^(?:Torch-Compiled Region|## Call CompiledFxGraph|TorchDynamo Cache Lookup|"
                         r"AOTDispatcher|Pregraph bytecode|CompiledFunction|## |cudaGraphLaunch|"
                         r"Runtime Triggered|Lazy Compilation|Pre-graph|Post-graph|detach_$|perfkit_)")


def _aten(op: str) -> str:
    if op in _GEMM:
        return "GEMM"
    if "attention" in op or op in ("_softmax", "softmax", "_safe_softmax"):
        return "attention"
    if op in _NORM:
        return "norm"
    if op in _KV:
        return "kv_cache"
    if op in _VIEW:
        return HOST
    if op in _COPY:
        return "memcpy"
    if op in ("mean", "sum", "amax", "max", "argmax", "topk", "sort", "cumsum"):
        return "reduction"
    return "elementwise"  # the rest of aten runs pointwise: add, mul, silu, where, embedding, ...


def _fused(ops: str) -> str:
    """The category of an Inductor kernel from the aten ops in its name (the main op wins)."""
    if "scaled_dot_product" in ops or "flash_attention" in ops or "_softmax" in ops:
        return "attention"
    words = set(ops.split("_"))
    if "rms" in words or ("mean" in words and "rsqrt" in words) or "layer_norm" in ops:
        return "norm"
    if words & {"mm", "addmm", "bmm"}:
        return "GEMM"
    if "index_put" in ops:
        return "kv_cache"
    return "elementwise"


@cache
def op_category(name: str) -> str:
    """Category of a CPU op, an Inductor kernel or a GPU kernel name (see the module docstring)."""
    m = _FUSED.search(name)
    if m:
        return _fused(m.group(1))
    if name.startswith("aten::"):
        return _aten(name[6:])
    if _HOST_NAMES.match(name):
        return HOST
    return category_of(name)


def is_framework(name: str) -> bool:
    """A range torch itself opens around compiled code (Dynamo, AOT, Inductor's graph call)."""
    return bool(_HOST_NAMES.match(name)) and not name.startswith("perfkit_")
