"""Attention runner: F.scaled_dot_product_attention on the chosen backend, vs a float32 math reference.

Shapes: q [B, H, S_q, D]; k, v [B, H_kv, S_k, D]. Prefill: S_q = S_k = seq_len, `causal` as
given. Decode: S_q = query_len (1 unless given), S_k = context, no causal mask; a ragged batch pads K / V to max(L_i) and masks the
padding ([B, 1, 1, L_max] boolean mask; flash takes no mask, so ragged points need another
backend). GQA: `native` passes enable_gqa=True; `expand` repeats K / V heads inside the timed
call (what code without GQA support does). The backend that actually ran is detected from the
aten op SDPA dispatched to and recorded as `backend_ran`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

from perfkit.core.cost import Cost
from perfkit.workloads.attention.cost import (
    decode_attention_cost,
    padded_kv_bytes,
    prefill_attention_cost,
    unfused_extra_bytes,
)
from perfkit.workloads.attention.sdpa_backends import (
    backend_context,
    gqa_sdpa,
    run_and_detect,
    sdpa_has_native_gqa,
)
from perfkit.workloads.base import Point, Prepared, RunContext, Unsupported
from perfkit.workloads.dtypes import DTYPE_BYTES, torch_dtype
from perfkit.workloads.numerics import compare

# Relative Frobenius error vs the float32 reference that a correct kernel stays under
# (low-precision kernels round P to the input dtype before P V).
ATTN_TOL = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 5e-3}
REF_BLOCK_BYTES = 1 << 30  # the reference computes scores in query blocks of at most 1 GiB


@contextlib.contextmanager
def strict_fp32() -> Iterator[None]:
    """No TF32 in the float32 reference on a GPU."""
    if not torch.cuda.is_available():
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def reference_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool, mask: Tensor | None) -> Tensor:
    """softmax(q k^T / sqrt(D) + mask) v in float32 with explicit ops (no SDPA).

    q [B, H, S_q, D]; k, v [B, H_kv, S_k, D]; mask [B, 1, 1, S_k] bool or None. Query head h
    uses kv head h // (H / H_kv). Computed per query group and in query blocks of <= 1 GiB of
    scores, so long contexts fit beside the kernel's own buffers.
    """
    b, h, s_q, d = q.shape
    h_kv, s_k = k.shape[1], k.shape[2]
    group = h // h_kv
    k32, v32 = k.float(), v.float()
    grouped = q.reshape(b, h_kv, group, s_q, d)
    out = torch.empty(b, h_kv, group, s_q, d, dtype=torch.float32, device=q.device)
    block = max(1, min(s_q, REF_BLOCK_BYTES // max(4 * b * h_kv * s_k, 1)))
    with strict_fp32():
        for g in range(group):
            for start in range(0, s_q, block):
                rows = slice(start, min(start + block, s_q))
                scores = grouped[:, :, g, rows].float() @ k32.transpose(-1, -2) / math.sqrt(d)
                if causal:  # [B, H_kv, rows, S_k]
                    qpos = torch.arange(rows.start, rows.stop, device=q.device)[:, None]
                    kpos = torch.arange(s_k, device=q.device)[None, :]
                    scores = scores.masked_fill(kpos > qpos, float("-inf"))
                if mask is not None:
                    scores = scores.masked_fill(~mask, float("-inf"))
                out[:, :, g, rows] = torch.softmax(scores, dim=-1) @ v32
    return out.view(b, h, s_q, d)


def support_problem(p: dict[str, Any], device: str) -> str | None:
    if device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability(torch.device(device))
        if p["dtype"] == "bf16" and major < 8:
            return f"bf16 attention needs compute capability >= 8.0; this GPU is {major}.{minor}"
    if "contexts" in p and p["backend"] == "flash" and device.startswith("cuda"):
        return "flash attention takes no attention mask; a ragged decode batch needs efficient, cudnn or math"
    return None


def _contexts(p: dict[str, Any]) -> list[int]:
    if "contexts" in p:
        return [int(c) for c in str(p["contexts"]).split("+")]
    return [p["context"]] * p["batch"]


def prepare(point: Point, ctx: RunContext) -> Prepared:
    p = point.params
    problem = support_problem(p, ctx.device)
    if problem:
        raise Unsupported(problem)
    dtype, dev = p["dtype"], ctx.device
    tdt = torch_dtype(dtype)
    b_el = DTYPE_BYTES[dtype][0]
    batch, heads, kv_heads, d = p["batch"], p["num_heads"], p["num_kv_heads"], p["head_dim"]
    group = heads // kv_heads
    gen = torch.Generator(device=dev).manual_seed(ctx.seed)

    def rand(*shape: int) -> Tensor:
        return torch.randn(shape, generator=gen, device=dev, dtype=torch.float32).to(tdt)

    mask: Tensor | None = None
    extra: dict[str, Any] = {}
    if p["phase"] == "prefill":
        s = p["seq_len"]
        causal = bool(p["causal"])
        q, k, v = rand(batch, heads, s, d), rand(batch, kv_heads, s, d), rand(batch, kv_heads, s, d)
        cost: Cost = prefill_attention_cost(batch, heads, kv_heads, s, d, causal, b_el)
        extra["unfused_extra_bytes"] = unfused_extra_bytes(batch, heads, s, s, b_el)
    else:
        contexts = _contexts(p)
        longest = max(contexts)
        causal = False
        queries = int(p.get("query_len", 1))
        q = rand(batch, heads, queries, d)
        k, v = rand(batch, kv_heads, longest, d), rand(batch, kv_heads, longest, d)
        if "contexts" in p:
            lengths = torch.tensor(contexts, device=dev)
            mask = (torch.arange(longest, device=dev)[None, :] < lengths[:, None])[:, None, None, :]
            extra["padded_kv_bytes"] = padded_kv_bytes(contexts, kv_heads, d, b_el)
        cost = decode_attention_cost(contexts, heads, kv_heads, d, b_el, queries=queries)
    expand = p["gqa"] == "expand" and group > 1
    if group > 1 and not expand and not sdpa_has_native_gqa():
        raise Unsupported(f"native GQA (enable_gqa) needs torch >= 2.5; this is {torch.__version__}; use gqa: expand")

    def fn() -> Tensor:
        keys, values = k, v
        if expand:
            keys, values = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return gqa_sdpa(q, keys, values, attn_mask=mask, is_causal=causal)

    ran, why = run_and_detect(fn, p["backend"])
    if ran is None:
        raise Unsupported(f"backend {p['backend']} cannot run this point on {dev}: {why}")

    def check() -> Any:
        ref = reference_attention(q, k, v, causal, mask)
        return compare(fn(), ref, ATTN_TOL[dtype], "float32 math attention (explicit softmax(QK^T/sqrt(D))V)")

    def metrics(_: Any) -> dict[str, Any]:
        return {"backend_ran": ran, **extra}

    return Prepared(
        fn=fn,
        cost=cost,
        check=check,
        metrics=metrics,
        context=lambda: backend_context(p["backend"]),
        params_extra={"backend_ran": ran},
    )
