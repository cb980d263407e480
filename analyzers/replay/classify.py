"""One op call -> the replay class that runs it: gemm, attention, moe, kernels (norms and the
small ops), or none (kind FILL, naming the op and its shapes)."""

from __future__ import annotations

from perfkit.analyzers.replay.attention import attention_entry, is_attention
from perfkit.analyzers.replay.entry import Built, unknown
from perfkit.analyzers.replay.gemm import GEMM_OPS, gemm_entry
from perfkit.analyzers.replay.moe import is_moe_op, moe_from_op
from perfkit.analyzers.replay.norms import kernels_entry, kernels_op
from perfkit.analyzers.replay.op_call import OpCall


def entry_for(call: OpCall) -> Built:
    """The workload entry that runs one op call alone."""
    if call.name in GEMM_OPS:
        return gemm_entry(call)
    if is_attention(call.name):
        return attention_entry(call)
    if is_moe_op(call.name):
        return moe_from_op(call)
    op = kernels_op(call)
    if op is not None:
        return kernels_entry(call, op)
    return unknown(f"{call.text()}: no workload kind runs this op; write a `kind: custom` entry "
                   "(docs/custom-kernels.md) that runs it with these shapes")
