"""nccl-tests bandwidth definitions for the collectives (REFERENCE.md "Collectives"). No torch.

S is the message size in bytes as nccl-tests counts it: the per-rank buffer for all_reduce,
all_to_all and broadcast; the total output of all_gather; the total input of reduce_scatter.
algbw = S / t; busbw = algbw x factor(n), comparable to a link's bandwidth whatever n is.
"""

from __future__ import annotations

from perfkit.core.cost import Cost

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
REDUCING = frozenset({"all_reduce", "reduce_scatter"})
SPLIT = frozenset({"all_gather", "reduce_scatter", "all_to_all"})  # S is split into n equal chunks


def bus_factor(op: str, world_size: int) -> float:
    """busbw / algbw for OP on WORLD_SIZE ranks (nccl-tests' PERFORMANCE.md)."""
    n = world_size
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective '{op}'; use one of {', '.join(OPS)}")


def message_elements(op: str, size_bytes: int, element_bytes: int, world_size: int) -> int:
    """Elements of the message (S / element size), rounded down to a multiple of n where the
    op splits it into per-rank chunks; 0 when the size holds fewer elements than that."""
    elements = size_bytes // element_bytes
    if op in SPLIT:
        elements -= elements % world_size
    return elements


def algbw_bytes_per_s(size_bytes: float, time_s: float) -> float:
    return size_bytes / time_s


def busbw_bytes_per_s(op: str, size_bytes: float, time_s: float, world_size: int) -> float:
    return algbw_bytes_per_s(size_bytes, time_s) * bus_factor(op, world_size)


def collective_cost(op: str, size_bytes: int, elements: int, world_size: int) -> Cost:
    """bytes: S (so achieved bytes/s is algbw); flop: the additions of a reduction per rank,
    (n - 1) / n of the elements for reduce_scatter and twice that for all_reduce (ring)."""
    n = world_size
    flop = 0.0
    if op == "reduce_scatter":
        flop = elements * (n - 1) / n
    elif op == "all_reduce":
        flop = 2.0 * elements * (n - 1) / n
    return Cost(flop=flop, bytes=float(size_bytes))
