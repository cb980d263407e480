"""Choose the scaled_dot_product_attention backend, and find out which one actually ran.

Choosing: torch.nn.attention.sdpa_kernel([SDPBackend.X]) allows only X ("auto": torch picks).
Finding out: a TorchDispatchMode sees the aten op SDPA dispatched to (SDPA itself is a composite
op): `_scaled_dot_product_flash_attention[_for_cpu]` -> flash, `..._efficient_attention` ->
efficient, `..._cudnn_attention` -> cudnn; the math path decomposes into matmul / softmax ops
and shows no fused op at all -> math.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

BACKENDS = ("auto", "flash", "efficient", "cudnn", "math")

FUSED_OPS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_flash_attention_for_cpu": "flash",
    "_scaled_dot_product_efficient_attention": "efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_scaled_dot_product_fused_attention_overrideable": "overrideable",
    "_flash_attention_forward": "flash",
    "_varlen_attn": "flash_varlen",  # torch.nn.attention.varlen (a custom op over flash varlen)
}


def sdpa_has_native_gqa() -> bool:
    """`scaled_dot_product_attention(..., enable_gqa=)` exists from torch 2.5 on."""
    import torch

    return bool(torch.__version__ >= "2.5")


def gqa_sdpa(q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
    """SDPA with H query heads over H_kv <= H key/value heads on every supported torch:
    native `enable_gqa` where it exists (2.5+), else K / V repeated to H heads (2.4)."""
    import torch.nn.functional as F

    h, h_kv = q.shape[-3], k.shape[-3]
    if h == h_kv:
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
    if sdpa_has_native_gqa():
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
    group = h // h_kv
    return F.scaled_dot_product_attention(q, k.repeat_interleave(group, dim=-3),
                                          v.repeat_interleave(group, dim=-3), **kwargs)


def _sdp_backend(name: str) -> Any:
    from torch.nn.attention import SDPBackend

    return {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }[name]


def backend_context(name: str) -> contextlib.AbstractContextManager[Any]:
    """Allow only backend `name` inside the context ("auto": no restriction)."""
    if name == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel

    return sdpa_kernel([_sdp_backend(name)])


class _SdpaOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.fused: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        if name in FUSED_OPS:
            self.fused.append(FUSED_OPS[name])
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def recording() -> Iterator[_SdpaOps]:
    with _SdpaOps() as mode:
        yield mode


def backends_seen(mode: _SdpaOps) -> str:
    """'flash', 'efficient', ... ('+'-joined when several ran); 'math' when no fused op ran."""
    seen = sorted(set(mode.fused))
    return "+".join(seen) if seen else "math"


def run_and_detect(fn: Callable[[], Any], backend: str) -> tuple[str | None, str | None]:
    """Run `fn` once with `backend` allowed: (backend that ran, None) or (None, why it cannot)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with backend_context(backend), recording() as mode:
                fn()
        except RuntimeError as exc:
            reasons = [str(w.message).strip().splitlines()[0] for w in caught if str(w.message).strip()]
            detail = "; ".join(dict.fromkeys(reasons)) or str(exc).strip().splitlines()[0]
            return None, detail[:400]
    return backends_seen(mode), None

