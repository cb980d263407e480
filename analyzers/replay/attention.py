"""Attention ops -> a `kind: attention` entry (workloads/attention/spec.py).

| op | layout of q, k, v | is_causal at input | backend |
|---|---|---|---|
| aten::scaled_dot_product_attention | [B, H, S, D] | 5 | auto |
| aten::_scaled_dot_product_flash_attention(_for_cpu) | [B, H, S, D] | 4 | flash |
| aten::_scaled_dot_product_efficient_attention | [B, H, S, D] | 6 | efficient |
| aten::_scaled_dot_product_cudnn_attention | [B, H, S, D] | 6 | cudnn |
| aten::_flash_attention_forward | [B, S, H, D] | 8 | flash |
| aten::_efficient_attention_forward | [B, S, H, D] | 9 (custom_mask_type) | efficient |
| flash_attn::_flash_attn_forward | [B, S, H, D] | 5 | flash |
| other ops naming attention (vLLM unified_attention, SGLang, flash_attn varlen) | [T, H, D] tokens | - | - |

Query length S_q = key length S_k: phase prefill, seq_len S, causal as traced. S_q = 1: phase
decode, seq_len = S_k (the context). Other S_q, not causal: decode with query_len S_q. Token-major
ops (a serving engine's paged attention) carry heads and head dim but not the batch or the
sequence lengths (those live in the engine's metadata): batch, seq_len and phase stay FILL.
"""

from __future__ import annotations

from perfkit.analyzers.replay.entry import Built
from perfkit.analyzers.replay.op_call import OpCall

ATTENTION_DTYPES = ("fp32", "bf16", "fp16")
_BHSD, _BSHD = "bhsd", "bshd"
ATTENTION_OPS: dict[str, tuple[str, int, str, int]] = {  # op -> (layout, is_causal at, backend, mask at)
    "aten::scaled_dot_product_attention": (_BHSD, 5, "auto", 3),
    "aten::_scaled_dot_product_flash_attention": (_BHSD, 4, "flash", -1),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (_BHSD, 4, "flash", 5),
    "aten::_scaled_dot_product_efficient_attention": (_BHSD, 6, "efficient", 3),
    "aten::_scaled_dot_product_cudnn_attention": (_BHSD, 6, "cudnn", 3),
    "aten::_flash_attention_forward": (_BSHD, 8, "flash", -1),
    "aten::_efficient_attention_forward": (_BSHD, 9, "efficient", 3),
    "flash_attn::_flash_attn_forward": (_BSHD, 5, "flash", -1),
}
_NOT_ATTENTION = ("backward", "reshape_and_cache", "cache")


def is_attention(name: str) -> bool:
    low = name.lower()
    return name in ATTENTION_OPS or (("attention" in low or "attn" in low) and not any(w in low for w in _NOT_ATTENTION))


def _dtype(call: OpCall, b: Built) -> None:
    dtype = call.dtype(0)
    if dtype in ATTENTION_DTYPES:
        b.entry["dtypes"] = [dtype]
    else:
        b.fill("dtypes", f"the query's type is {dtype or 'not recorded'}; kind attention runs {', '.join(ATTENTION_DTYPES)}")


def _token_major(call: OpCall) -> Built:
    """[T, H, D] (or [T, H D]) query and [T, H_kv, D] key: heads yes, batch and lengths no."""
    b = Built({"kind": "attention"})
    q, k = call.shape(0), call.shape(1)
    if q is not None and k is not None and len(q) == 3 and len(k) == 3:
        b.entry.update(num_heads=[q[1]], num_kv_heads=[k[1]], head_dim=[q[2]])
        b.notes.append(f"{call.name} ran on {q[0]} tokens of a batch whose sequences the trace does not list")
    else:
        for f in ("num_heads", "num_kv_heads", "head_dim"):
            b.fill(f, "" if f != "num_heads" else f"{call.name}'s inputs are {call.tensors()} (not [tokens, heads, head_dim])")
    why = "the op takes the batch's sequence lengths from the engine's metadata, which the trace does not record"
    b.fill("phase", why)
    b.fill("batch")
    b.fill("seq_len")
    _dtype(call, b)
    return b


def attention_entry(call: OpCall) -> Built:
    if call.name not in ATTENTION_OPS:
        return _token_major(call)
    layout, causal_at, backend, mask_at = ATTENTION_OPS[call.name]
    q, k = call.shape(0), call.shape(1)
    if q is None or k is None or len(q) != 4 or len(k) != 4:
        return _token_major(call)
    if layout == _BSHD:
        q, k = [q[0], q[2], q[1], q[3]], [k[0], k[2], k[1], k[3]]
    batch, heads, s_q, head_dim = q
    kv_heads, s_k = k[1], k[2]
    b = Built({"kind": "attention"})
    e = b.entry
    causal = call.flag(causal_at)
    if call.name == "aten::_efficient_attention_forward" and call.scalar(causal_at) is not None:
        causal = call.scalar(causal_at) != "0"  # custom_mask_type: 0 none, 1 / 2 causal
    if s_q == s_k:
        e.update(phase=["prefill"], batch=[batch], seq_len=[s_q])
    elif s_q == 1 or not causal:
        e.update(phase=["decode"], batch=[batch], seq_len=[s_k])
        if s_q != 1:
            e["query_len"] = [s_q]
        causal = None  # decode has no causal mask
    else:
        e.update(batch=[batch])
        b.fill("phase", f"a causal op with {s_q} queries against {s_k} keys: kind attention runs S_q = S_k "
                        "(prefill) or an uncausal S_q against a context (decode with query_len)")
        b.fill("seq_len")
    e.update(num_heads=[heads], num_kv_heads=[kv_heads], head_dim=[head_dim])
    if e.get("phase") == ["prefill"]:
        if causal is None:
            b.fill("causal", "the trace has no Concrete Inputs (is_causal)")
        else:
            e["causal"] = [causal]
    e["backend"] = [backend]
    _dtype(call, b)
    mask = call.shape(mask_at) if mask_at >= 0 else None
    if mask is not None:
        b.notes.append(f"the op ran with an attention mask {mask}; the spec runs without one "
                       "(on a GPU, a mask rules out the flash backend)")
    return b
