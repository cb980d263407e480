"""Analytic FLOP and minimal bytes of a CPU op from its recorded shapes (record_shapes=True).

Conventions (REFERENCE.md): FLOP = 2 per multiply-add; minimal bytes = every input read once
plus the output written once; attention is fused (no score matrix) and its FLOPs are halved
when causal (FlashAttention's convention). Bias adds and softmax are not counted as FLOPs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1, "long int": 8, "int": 4, "short int": 2, "signed char": 1,
    "unsigned char": 1, "bool": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}  # fmt: skip

Cost = tuple[float, float]  # (flop, bytes)


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape) if shape else 1


def _size(dtype: str) -> int | None:
    return DTYPE_BYTES.get(dtype)


def _is_shape(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(v, int) for v in x)


def _mm(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    a, b = dims[0], dims[1]
    if len(a) != 2 or len(b) != 2:
        return None
    (m, k), n = a, b[1]
    s = _size(types[0])
    return (2.0 * m * n * k, float(s * (m * k + k * n + m * n))) if s else None


def _addmm(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    bias, a, b = dims[0], dims[1], dims[2]
    if len(a) != 2 or len(b) != 2:
        return None
    (m, k), n = a, b[1]
    s = _size(types[1])
    return (2.0 * m * n * k, float(s * (m * k + k * n + m * n + _numel(bias)))) if s else None


def _bmm(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    a, b = dims[0], dims[1]
    if len(a) != 3 or len(b) != 3:
        return None
    bt, m, k = a
    n = b[2]
    s = _size(types[0])
    return (2.0 * bt * m * n * k, float(s * bt * (m * k + k * n + m * n))) if s else None


def _baddbmm(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    cost = _bmm(dims[1:], types[1:], concrete[1:])
    s = _size(types[1])
    if cost is None or not s:
        return None
    return cost[0], cost[1] + s * _numel(dims[0])


def _matmul(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    a, b = list(dims[0]), list(dims[1])
    if not a or not b:
        return None
    a = [1, *a] if len(a) == 1 else a
    b = [*b, 1] if len(b) == 1 else b
    m, k, n = a[-2], a[-1], b[-1]
    try:
        import numpy as np

        batch = _numel(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
    except ValueError:
        return None
    s = _size(types[0])
    if not s:
        return None
    return 2.0 * batch * m * n * k, float(s * (_numel(a) + _numel(b) + batch * m * n))


def _linear(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    x, w = dims[0], dims[1]
    if len(w) != 2 or not x:
        return None
    n, k = w
    rows = _numel(x[:-1])
    bias = _numel(dims[2]) if len(dims) > 2 and _is_shape(dims[2]) and dims[2] else 0
    s = _size(types[0])
    return (2.0 * rows * n * k, float(s * (rows * k + n * k + bias + rows * n))) if s else None


def _sdpa(causal_index: int) -> Callable[[list[Any], list[str], list[str]], Cost | None]:
    def cost(dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
        q, k, v = dims[0], dims[1], dims[2]
        if len(q) < 3 or len(k) < 3 or len(v) < 3:
            return None
        lq, e = q[-2], q[-1]
        sk, ev = k[-2], v[-1]
        heads_batch = _numel(q[:-2])
        flop = 2.0 * heads_batch * lq * sk * (e + ev)
        causal = len(concrete) > causal_index and concrete[causal_index].strip().lower() == "true"
        if causal:
            flop /= 2
        s = _size(types[0])
        if not s:
            return None
        return flop, float(s * (_numel(q) + _numel(k) + _numel(v) + heads_batch * lq * ev))

    return cost


OP_COSTS: dict[str, Callable[[list[Any], list[str], list[str]], Cost | None]] = {
    "aten::mm": _mm,
    "aten::addmm": _addmm,
    "aten::bmm": _bmm,
    "aten::baddbmm": _baddbmm,
    "aten::matmul": _matmul,
    "aten::linear": _linear,
    "aten::scaled_dot_product_attention": _sdpa(5),
    "aten::_scaled_dot_product_flash_attention": _sdpa(4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": _sdpa(4),
    "aten::_scaled_dot_product_efficient_attention": _sdpa(6),
    "aten::_scaled_dot_product_cudnn_attention": _sdpa(6),
}


def op_cost(name: str, dims: list[Any], types: list[str], concrete: list[str]) -> Cost | None:
    """(flop, bytes) of one call, or None when the op or its shapes are not understood."""
    fn = OP_COSTS.get(name)
    if fn is None or not isinstance(dims, list) or len(dims) < 2:
        return None
    types = [str(t) for t in types] if isinstance(types, list) else []
    concrete = [str(c) for c in concrete] if isinstance(concrete, list) else []
    if not types:
        return None
    try:
        return fn(dims, types + [""] * len(dims), concrete)
    except (TypeError, ValueError, IndexError):
        return None
