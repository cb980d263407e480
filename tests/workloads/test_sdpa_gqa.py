"""GQA attention on every supported torch: native enable_gqa (2.5+) and repeated K/V (2.4)."""

from __future__ import annotations

import pytest
import torch

import perfkit.workloads.attention.sdpa_backends as sb


@pytest.mark.parametrize("causal", [False, True])
def test_repeat_fallback_equals_native(monkeypatch: pytest.MonkeyPatch, causal: bool) -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 8, 5, 16, generator=g)
    k = torch.randn(2, 2, 5, 16, generator=g)
    v = torch.randn(2, 2, 5, 16, generator=g)
    native = sb.gqa_sdpa(q, k, v, is_causal=causal)
    monkeypatch.setattr(sb, "sdpa_has_native_gqa", lambda: False)
    repeated = sb.gqa_sdpa(q, k, v, is_causal=causal)
    torch.testing.assert_close(repeated, native, rtol=1e-5, atol=1e-6)
    # and both equal plain MHA over explicitly repeated heads
    mha = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1), is_causal=causal)
    torch.testing.assert_close(native, mha, rtol=1e-5, atol=1e-6)


def test_native_gqa_detection_matches_this_torch() -> None:
    assert sb.sdpa_has_native_gqa() == (torch.__version__ >= "2.5")
