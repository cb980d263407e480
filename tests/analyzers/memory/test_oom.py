"""OOM explanation: requested vs largest free block vs all free memory."""

from __future__ import annotations

import pytest

from perfkit.analyzers.memory.fragmentation import fragmentation
from perfkit.analyzers.memory.model import Block, Segment
from perfkit.analyzers.memory.oom import explain_oom, facts_from_snapshot, parse_oom_message
from perfkit.core.errors import SpecError

GiB = 1 << 30
MESSAGE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
           "capacity of 79.10 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has "
           "78.07 GiB memory in use. Of the allocated memory 70.50 GiB is allocated by PyTorch, and 6.90 GiB "
           "is reserved by PyTorch but unallocated.")


def test_the_message_is_read_and_fits_defragmented() -> None:
    facts = parse_oom_message(MESSAGE)
    assert facts.requested_bytes == 2 * GiB and facts.device == "cuda:0"
    assert facts.capacity_bytes == round(79.10 * GiB) and facts.device_free_bytes == round(1.02 * GiB)
    assert facts.allocated_bytes == round(70.5 * GiB) and facts.cached_free_bytes == round(6.9 * GiB)
    out = explain_oom(facts)
    assert out.verdict == "fits-defragmented" and out.total_free_bytes == round(1.02 * GiB) + round(6.9 * GiB)
    assert "expandable_segments" in out.text


def test_too_large_even_defragmented() -> None:
    out = explain_oom(parse_oom_message(MESSAGE.replace("2.00 GiB", "9.00 GiB")))
    assert out.verdict == "does-not-fit" and out.total_free_bytes is not None
    assert out.shortfall_bytes == 9 * GiB - out.total_free_bytes


def test_a_message_without_a_request_is_one_line() -> None:
    with pytest.raises(SpecError, match="Tried to allocate"):
        parse_oom_message("RuntimeError: something else")


def test_snapshot_oom_uses_the_segments() -> None:
    seg = Segment(0, 3 * GiB, blocks=(Block(0, GiB, "inactive"), Block(GiB, GiB, "active_allocated"),
                                      Block(2 * GiB, GiB, "inactive")))
    frag = fragmentation([seg])
    split = explain_oom(facts_from_snapshot(int(1.5 * GiB), 0, "cuda:0", frag))
    assert split.verdict == "fits-defragmented" and split.facts.largest_free_bytes == GiB
    fits = explain_oom(facts_from_snapshot(GiB // 2, 0, "cuda:0", frag))
    assert fits.verdict == "fits-largest-free"
    assert explain_oom(facts_from_snapshot(3 * GiB, GiB // 2, "cuda:0", frag)).verdict == "does-not-fit"
