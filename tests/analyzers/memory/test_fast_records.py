"""The fast constructors make the same frozen records as the dataclass constructors."""

from __future__ import annotations

import dataclasses

import pytest

from perfkit.analyzers.memory.model import Allocation, Frame, MemoryEvent, new_allocation, new_event


def test_new_event_equals_the_dataclass_and_stays_frozen() -> None:
    values = (7, "alloc", 4096, 512, "cuda:1", 99, 3, (Frame("f", "a.py", 2),), "decode", "aten::mm", 5,
              "activation", 1024, 2048)
    assert [f.name for f in dataclasses.fields(MemoryEvent)] == list(MemoryEvent.__slots__)
    made = new_event(*values)
    assert made == MemoryEvent(*values) and type(made) is MemoryEvent
    assert tuple(getattr(made, n) for n in MemoryEvent.__slots__) == values  # every field set, in order
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.addr = 0  # type: ignore[misc]


def test_new_allocation_equals_the_dataclass() -> None:
    values = (4096, 512, 3, None, 10, (), "prefill", "aten::empty", "kv_cache", "rule:kv-cache")
    made = new_allocation(*values)
    assert made == Allocation(*values) and tuple(getattr(made, n) for n in Allocation.__slots__) == values
    assert hash(made) == hash(Allocation(*values))
