"""The memory budget's arithmetic on CUDA-like facts: the terms partition the device memory in
use, graph pools are shown once ("of which", not subtracted again), the KV what-if."""

from __future__ import annotations

import pytest

from perfkit.core.codec import from_builtins, to_builtins
from perfkit.core.memory_budget import (
    MemoryBudget,
    PassFacts,
    ResidentMemory,
    kv_what_if,
    make_budget,
)

GIB = 1 << 30
RESIDENT = ResidentMemory(weights_bytes=16 * GIB, kv_cache_bytes=GIB, kv_cache_estimate_bytes=GIB,
                          kv_bytes_per_token=128 * 1024, tokens_per_sequence=4096, batch=2)
FACTS = PassFacts(allocated_before_bytes=17 * GIB + 100, peak_allocated_bytes=18 * GIB, peak_reserved_bytes=19 * GIB,
                  device_used_bytes=20 * GIB, reserved_now_bytes=19 * GIB, graph_pool_bytes=GIB // 2,
                  device_total_bytes=80 * GIB, used_how="NVML used")


def test_terms_partition_the_memory_in_use() -> None:
    b = make_budget(RESIDENT, FACTS, "cuda:0", 0.9)
    assert b.value("other_allocated_bytes") == 100
    assert b.value("activation_peak_bytes") == GIB - 100
    assert b.value("allocator_cache_bytes") == GIB and b.value("non_torch_bytes") == GIB
    assert b.accounted_bytes == 20 * GIB  # = NVML used: nothing counted twice, graph pools included once
    assert b.value("graph_pool_bytes") == GIB // 2


def test_kv_what_if() -> None:
    b = make_budget(RESIDENT, FACTS, "cuda:0", 0.9)
    w = b.what_if
    assert w is not None and w.note == ""
    need = 19 * GIB - GIB + GIB  # peak reserved - KV + non-PyTorch
    assert w.kv_budget_bytes == int(0.9 * 80 * GIB) - need
    assert w.tokens == w.kv_budget_bytes // (128 * 1024) and w.sequences == w.tokens // 4096
    low = kv_what_if(b, 0.2)  # 16 GiB < what the engine needs: nothing fits, never negative tokens
    assert low is not None and low.kv_budget_bytes < 0 and low.tokens == low.sequences == 0
    with pytest.raises(ValueError, match="not in"):
        kv_what_if(b, 1.5)


def test_not_measured_is_none_and_round_trips() -> None:
    cpu = PassFacts(allocated_before_bytes=17 * GIB, peak_allocated_bytes=18 * GIB, not_measured="not measured on CPU")
    b = make_budget(RESIDENT, cpu, "cpu")
    t = b.term("allocator_cache_bytes")
    assert t is not None and t.value_bytes is None and t.source == "not measured" and "CPU" in t.note
    assert b.what_if is None and b.accounted_bytes == 18 * GIB
    assert from_builtins(MemoryBudget, to_builtins(b)) == b
