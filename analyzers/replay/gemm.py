"""GEMM ops (aten::mm / addmm / matmul / linear / bmm / baddbmm) -> a `kind: gemm` entry."""

from __future__ import annotations

import math

from perfkit.analyzers.replay.entry import Built
from perfkit.analyzers.replay.op_call import OpCall

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::matmul", "aten::linear", "aten::bmm", "aten::baddbmm")
GEMM_DTYPES = ("fp32", "bf16", "fp16", "fp64", "fp8_e4m3")


def gemm_entry(call: OpCall) -> Built:
    op = call.name
    shapes = [d if isinstance(d, list) else [] for d in call.dims]
    a, b = (shapes[1], shapes[2]) if op in ("aten::addmm", "aten::baddbmm") and len(shapes) >= 3 else [*shapes, [], []][:2]
    built = Built({"kind": "gemm"})
    e = built.entry
    if op == "aten::linear" and len(a) >= 1 and len(b) == 2:
        e.update(m=int(math.prod(a[:-1])), n=int(b[0]), k=int(b[1]))
    elif op in ("aten::bmm", "aten::baddbmm") and len(a) == 3 and len(b) == 3:
        e.update(m=int(a[1]), n=int(b[2]), k=int(a[2]), batch=int(a[0]))
    elif len(a) >= 2 and len(b) >= 2:
        e.update(m=int(math.prod(a[:-1])), n=int(b[-1]), k=int(a[-1]))
    for f in ("m", "n", "k"):
        if f not in e:
            built.fill(f)
    dtype = call.dtype(1 if op in ("aten::addmm", "aten::baddbmm") else 0)
    if dtype in GEMM_DTYPES:
        e["dtypes"] = [dtype]
    else:
        built.fill("dtypes", f"the op's input type is {dtype or 'not recorded'}; kind gemm runs {', '.join(GEMM_DTYPES)}")
    return built
