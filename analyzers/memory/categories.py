"""What each allocation is for (parameter, activation, gradient, KV cache, ...), and how that
was decided (`Allocation.category_source`).

1. `input`: the input said so (`_profile_to_snapshot` snapshots carry torch's memory profiler
   categories: parameter, activation, gradient, optimizer_state, temporary, input,
   autograd_detail).
2. otherwise a rule on the names around the allocation (its stack frames, op and stage,
   lower-cased), first match wins; the rule's name becomes the source:
   - `rule:kv-cache`: a name holds "kv_cache", "kvcache", "past_key_value" or "setup_caches";
   - `rule:optimizer`: "optimizer" or ".step(" (an optimizer's step);
   - `rule:parameter`: "reset_parameters", "to_empty", "load_state_dict", "build_model";
   - `rule:backward`: "backward" or "autograd" -> gradient (can include backward temporaries);
   - `rule:same-op`: freed inside the operator call that made it -> temporary (Kineto: the
     free event lies in the same op call, `op_id`).
3. otherwise `unknown` (source `none`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from perfkit.analyzers.memory.model import Allocation, MemoryEvent

RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("rule:kv-cache", "kv_cache", ("kv_cache", "kvcache", "past_key_value", "setup_caches")),
    ("rule:optimizer", "optimizer_state", ("optimizer", ".step(")),
    ("rule:parameter", "parameter", ("reset_parameters", "to_empty", "load_state_dict", "build_model")),
    ("rule:backward", "gradient", ("backward", "autograd")),
)


def _names(a: Allocation) -> str:
    return " ".join([a.stage, a.op, *(f.name for f in a.frames), *(f.filename for f in a.frames)]).lower()


def categorize(allocations: Sequence[Allocation], events: Sequence[MemoryEvent] = ()) -> list[Allocation]:
    """Allocations with category and category_source set by the order above. `events`: the
    events the allocations' indices point into (for the same-op rule; optional)."""
    by_index = {e.index: e for e in events} if events else {}
    decided: dict[tuple[str, str, int], tuple[str, str] | None] = {}  # frames tuples are shared
    out = []
    for a in allocations:
        if a.category != "unknown":
            out.append(a if a.category_source == "input" else replace(a, category_source="input"))
            continue
        key = (a.stage, a.op, id(a.frames))
        if key in decided:
            found = decided[key]
        else:
            names = _names(a)
            found = decided[key] = next(
                ((src, cat) for src, cat, words in RULES if any(w in names for w in words)), None)
        if found is None and a.free_index is not None and by_index:
            made, freed = by_index.get(a.alloc_index), by_index.get(a.free_index)
            if made is not None and freed is not None and made.op_id >= 0 and made.op_id == freed.op_id:
                found = ("rule:same-op", "temporary")
        out.append(replace(a, category=found[1], category_source=found[0]) if found else a)
    return out


@dataclass(frozen=True, slots=True)
class CategoryTotal:
    category: str
    alive_at_peak_bytes: int  # bytes of this category alive at the peak
    allocated_bytes: int  # bytes allocated over the whole input
    count: int  # allocations over the whole input
    sources: tuple[str, ...]  # how they were decided


def category_totals(allocations: Sequence[Allocation], alive: Sequence[Allocation]) -> list[CategoryTotal]:
    """Per category: bytes alive at the peak, bytes and count over the input; largest first."""
    alive_keys = {(a.addr, a.alloc_index) for a in alive}
    acc: dict[str, list[int]] = {}
    sources: dict[str, set[str]] = {}
    for a in allocations:
        row = acc.setdefault(a.category, [0, 0, 0])
        row[0] += a.size_bytes if (a.addr, a.alloc_index) in alive_keys else 0
        row[1] += a.size_bytes
        row[2] += 1
        sources.setdefault(a.category, set()).add(a.category_source)
    rows = [CategoryTotal(c, r[0], r[1], r[2], tuple(sorted(sources[c]))) for c, r in acc.items()]
    return sorted(rows, key=lambda r: (-r.alive_at_peak_bytes, -r.allocated_bytes, r.category))
