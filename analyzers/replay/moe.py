"""MoE -> a `kind: moe` entry (workloads/moe/spec.py): from one fused-experts op, or from the ops
inside a range that runs one MoE layer (perfkit's own decoder: router linear, softmax, topk,
experts).

Fused-experts ops (vLLM / SGLang `*fused_experts*`, `*fused_moe*`): hidden [T, d],
w1 [E, 2F, d], w2 [E, d, F], topk weights [T, k]: every field; the op runs routed experts only,
so shared_experts is 0. `vllm::moe_forward` (hidden [T, d], router logits [T, E]) says T, d and E;
expert_ffn_dim and top_k stay FILL.
A range: T and E from aten::topk's input [T, E], k from its Concrete Inputs, d from the router
linear's weight [E, d], F from an expert weight [E, F, d] / [E, d, F], shared experts from the
linear weights [F_s, d] outside the experts (n shared experts of width F_s are one SwiGLU of width
n F_s), the implementation from what ran (bincount: grouped, an expert-major einsum: dense,
aten::index of the weights: gather).
"""

from __future__ import annotations

from perfkit.analyzers.replay.entry import Built
from perfkit.analyzers.replay.op_call import OpCall

MOE_DTYPES = ("fp32", "bf16", "fp16")
_FIELDS = ("tokens", "dim", "expert_ffn_dim", "experts", "top_k")
_WEIGHT_READERS = ("aten::einsum", "aten::select", "aten::index")  # ops that take an expert weight [E, ., .]


def is_moe_op(name: str) -> bool:
    low = name.lower()
    return ("fused_experts" in low or "fused_moe" in low or low.endswith("::moe_forward")) and "backward" not in low


def _dtype(b: Built, dtype: str | None) -> None:
    if dtype in MOE_DTYPES:
        b.entry["dtypes"] = [dtype]
    else:
        b.fill("dtypes", f"the hidden states' type is {dtype or 'not recorded'}; kind moe runs {', '.join(MOE_DTYPES)}")


def _finish(b: Built, found: dict[str, int]) -> Built:
    for f in _FIELDS:
        if f in found:
            b.entry[f] = [found[f]]
        else:
            b.fill(f)
    return b


def moe_from_op(call: OpCall) -> Built:
    b = Built({"kind": "moe"})
    found: dict[str, int] = {}
    t = call.tensors()
    hidden = call.shape(0)
    if hidden is not None and len(hidden) == 2:
        found.update(tokens=hidden[0], dim=hidden[1])
    if call.name.lower().endswith("::moe_forward"):
        logits = call.shape(1)
        if logits is not None and len(logits) == 2:
            found["experts"] = logits[1]
        b.notes.append(f"{call.name} takes router logits, not the expert weights: the trace does not say "
                       "the experts' width or top_k")
    elif len(t) >= 4 and len(t[1]) == 3 and len(t[2]) == 3 and len(t[3]) == 2:
        w2, topk = t[2], t[3]
        found.update(experts=w2[0], expert_ffn_dim=w2[2], top_k=topk[1])
        b.entry["shared_experts"] = [0]
        b.notes.append(f"{call.name} runs the routed experts only (shared experts are other ops): shared_experts 0")
    b.notes.append("kind moe runs perfkit's torch experts (impl grouped), not the engine's fused kernel")
    _finish(b, found)
    _dtype(b, call.dtype(0))
    return b


def moe_from_range(calls: list[OpCall]) -> Built | None:
    """The MoE layer the ops of one range ran, or None when no aten::topk ran in it."""
    topk = next((c for c in calls if c.name == "aten::topk" and c.shape(0) is not None), None)
    if topk is None:
        return None
    b = Built({"kind": "moe"})
    probs = topk.shape(0) or []
    found: dict[str, int] = {"tokens": probs[0], "experts": probs[-1]} if len(probs) == 2 else {}
    k = topk.scalar(1)
    if k is not None and k.isdigit():
        found["top_k"] = int(k)
    experts = found.get("experts")
    router = next((c for c in calls if c.name == "aten::linear" and (w := c.shape(1)) is not None
                   and len(w) == 2 and w[0] == experts), None)
    if router is not None:
        found["dim"] = (router.shape(1) or [0, 0])[1]
    d = found.get("dim")
    weight = next((s for c in calls if c.name in _WEIGHT_READERS for s in c.tensors()
                   if len(s) == 3 and s[0] == experts and d in s[1:]), None)
    if weight is not None:
        found["expert_ffn_dim"] = weight[1] if weight[2] == d else weight[2]
    names = {c.name for c in calls}
    impl = "grouped" if "aten::bincount" in names else "dense" if any(
        c.name == "aten::einsum" and any(len(s) == 3 and s[0] == experts for s in c.tensors()) for c in calls
    ) else "gather" if "aten::index" in names else None
    if impl is not None:
        b.entry["impl"] = [impl]
    _shared(b, calls, experts, d, found.get("expert_ffn_dim"), impl)
    _finish(b, found)
    _dtype(b, router.dtype(0) if router is not None else None)
    return b


def _shared(b: Built, calls: list[OpCall], experts: int | None, d: int | None, f: int | None,
            impl: str | None) -> None:
    widths = sorted({w[0] for c in calls if c.name == "aten::linear" and (w := c.shape(1)) is not None
                     and len(w) == 2 and w[1] == d and w[0] != experts})
    if impl == "grouped":
        widths = [w for w in widths if w != f]  # the routed experts run as linears on weight slices [F, d] here
        if f is not None and any(c.name == "aten::linear" and c.shape(1) == [f, d] for c in calls):
            b.fill("shared_experts", f"the routed experts' linears and a shared expert's both have weights "
                                     f"[{f}, {d}] here: the trace cannot tell them apart (a decode step's range can)")
            b.fill("shared_ffn_dim")
            return
    if len(widths) > 1:
        b.fill("shared_experts", f"linear weights of widths {widths} beside the experts: which are shared experts?")
        b.fill("shared_ffn_dim")
        return
    b.entry["shared_experts"] = [1 if widths else 0]
    b.entry["shared_ffn_dim"] = [widths[0] if widths else 0]
