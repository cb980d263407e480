"""Norms and the small ops `kind: kernels` runs (workloads/kernels/spec.py) -> a kernels entry.

| op | kernels op | rows x width from |
|---|---|---|
| aten::rms_norm, aten::_fused_rms_norm, _C::rms_norm, sgl_kernel::rmsnorm, *rms_norm* | rmsnorm | input 0 |
| aten::layer_norm, aten::native_layer_norm, *layer_norm* | layernorm | input 0 |
| _C::fused_add_rms_norm, sgl_kernel::fused_add_rmsnorm, *fused_add_rms* | add_rmsnorm | input 0 |
| aten::softmax, aten::_softmax (over the last dimension) | softmax | input 0 |
| aten::gelu | gelu | input 0 |
| _C::silu_and_mul, sgl_kernel::silu_and_mul | swiglu | the output (input 0): [T, F] |
| aten::add of two tensors of one shape | residual_add | input 0 |
"""

from __future__ import annotations

from perfkit.analyzers.replay.entry import Built
from perfkit.analyzers.replay.op_call import OpCall, rows_and_width

KERNEL_DTYPES = ("fp32", "bf16", "fp16")
_EXACT = {
    "aten::rms_norm": "rmsnorm", "aten::_fused_rms_norm": "rmsnorm",
    "aten::layer_norm": "layernorm", "aten::native_layer_norm": "layernorm",
    "aten::softmax": "softmax", "aten::_softmax": "softmax",
    "aten::gelu": "gelu", "_C::silu_and_mul": "swiglu", "sgl_kernel::silu_and_mul": "swiglu",
}


def kernels_op(call: OpCall) -> str | None:
    """The `kind: kernels` op that runs `call`, or None."""
    if call.name in _EXACT:
        return _EXACT[call.name]
    low = call.name.lower().replace("_", "")
    if "backward" in low:
        return None
    if "fusedaddrms" in low:
        return "add_rmsnorm"
    if "rmsnorm" in low:
        return "rmsnorm"
    if "layernorm" in low:
        return "layernorm"
    if call.name in ("aten::add", "aten::add_"):
        a, b = call.shape(0), call.shape(1)
        return "residual_add" if a is not None and a == b else None
    return None


def kernels_entry(call: OpCall, op: str) -> Built:
    b = Built({"kind": "kernels", "op": [op]})
    x = call.shape(0)
    if op == "softmax" and x is not None:
        dim = call.scalar(1)
        if dim is None or dim not in ("-1", str(len(x) - 1)):
            b.notes.append(f"softmax over dimension {dim or '?'} of {x}; kind kernels runs it over the last one")
            x = None
    if x is None:
        b.fill("tokens", f"{call.name}'s input shape is not in the trace (record_shapes off?)")
        b.fill("hidden")
    else:
        tokens, hidden = rows_and_width(x)
        b.entry.update(tokens=[tokens], hidden=[hidden])
    dtype = call.dtype(0)
    if dtype in KERNEL_DTYPES:
        b.entry["dtypes"] = [dtype]
    else:
        b.fill("dtypes", f"the input's type is {dtype or 'not recorded'}; kind kernels runs {', '.join(KERNEL_DTYPES)}")
    return b
