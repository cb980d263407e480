"""Explain an out-of-memory failure: requested size vs the largest free block vs all free memory.

Two sources: an `oom` event of a snapshot's device trace (size = requested bytes, addr = bytes
free on the device, as torch records it) with the snapshot's segments, or a pasted message
(`parse_oom_message`: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
capacity of 79.10 GiB of which 1.02 GiB is free. ... 3.50 GiB is reserved by PyTorch but
unallocated ...").

The verdict (`OomExplanation.verdict`):
- `fits-largest-free`: a cached free block was large enough (the request came from another
  stream or a private pool, whose blocks the allocator does not share);
- `fits-defragmented`: no single block was large enough, but free on the device plus every
  free cached byte is: the memory was there, in pieces. Defragmentation would have made it fit;
  `expandable_segments:True` (PYTORCH_CUDA_ALLOC_CONF) grows one segment instead of cutting new
  ones and usually removes this failure;
- `does-not-fit`: even all free memory together is smaller than the request: use less memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perfkit.analyzers.memory.fragmentation import Fragmentation
from perfkit.core.errors import SpecError

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "KB": 1000, "MB": 10**6, "GB": 10**9, "TB": 10**12, "bytes": 1}
_SIZE = r"([0-9]+(?:\.[0-9]+)?)\s*(B|bytes|[KMGT]i?B)"
_PATTERNS = {
    "requested": re.compile(r"Tried to allocate " + _SIZE),
    "capacity": re.compile(r"total capacity of " + _SIZE),
    "device_free": re.compile(r"of which " + _SIZE + r" is free"),
    "allocated": re.compile(_SIZE + r" is allocated by PyTorch"),
    "reserved_unallocated": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
}
_DEVICE = re.compile(r"GPU (\d+)")


@dataclass(frozen=True, slots=True)
class OomFacts:
    requested_bytes: int
    device: str = ""
    capacity_bytes: int | None = None
    device_free_bytes: int | None = None  # free on the device, outside the allocator's cache
    allocated_bytes: int | None = None
    cached_free_bytes: int | None = None  # reserved by the allocator but unallocated
    largest_free_bytes: int | None = None  # the largest cached free block (snapshot only)


@dataclass(frozen=True, slots=True)
class OomExplanation:
    facts: OomFacts
    total_free_bytes: int | None  # device free + cached free
    verdict: str  # fits-largest-free / fits-defragmented / does-not-fit / unknown
    shortfall_bytes: int  # requested - total free when it does not fit, else 0
    text: str


def _bytes(match: re.Match[str]) -> int:
    return round(float(match.group(1)) * UNITS[match.group(2)])


def parse_oom_message(text: str) -> OomFacts:
    """The numbers of torch's CUDA OOM message; SpecError when "Tried to allocate" is absent."""
    found = {k: p.search(text) for k, p in _PATTERNS.items()}
    requested = found["requested"]
    if requested is None:
        raise SpecError("--oom: no 'Tried to allocate <size>' in the message; paste torch's whole "
                              "'CUDA out of memory' message")
    device = _DEVICE.search(text)

    def get(key: str) -> int | None:
        m = found[key]
        return _bytes(m) if m is not None else None

    return OomFacts(_bytes(requested), f"cuda:{device.group(1)}" if device else "",
                    get("capacity"), get("device_free"), get("allocated"), get("reserved_unallocated"))


def facts_from_snapshot(requested_bytes: int, device_free_bytes: int, device: str,
                        frag: Fragmentation | None) -> OomFacts:
    if frag is None:
        return OomFacts(requested_bytes, device, device_free_bytes=device_free_bytes)
    return OomFacts(requested_bytes, device, None, device_free_bytes, frag.allocated_bytes,
                    frag.free_bytes, frag.largest_free_bytes)


def explain_oom(facts: OomFacts) -> OomExplanation:
    req = facts.requested_bytes
    parts = [x for x in (facts.device_free_bytes, facts.cached_free_bytes) if x is not None]
    total = sum(parts) if parts else None
    shortfall = 0
    if facts.largest_free_bytes is not None and facts.largest_free_bytes >= req:
        verdict = "fits-largest-free"
        text = ("a cached free block was large enough: the request came from another stream or a "
                "private pool (CUDA graphs), whose blocks are not shared")
    elif total is None:
        verdict, text = "unknown", "the input does not say how much memory was free"
    elif total >= req:
        verdict = "fits-defragmented"
        text = ("enough memory was free but not in one piece: defragmentation would have made it "
                "fit; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    else:
        verdict, shortfall = "does-not-fit", req - total
        text = "even all free memory together is too small: use less memory (batch, sequence, dtype)"
    return OomExplanation(facts, total, verdict, shortfall, text)
