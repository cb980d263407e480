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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perfkit.analyzers.memory.model import MemoryEvent

RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("rule:kv-cache", "kv_cache", ("kv_cache", "kvcache", "past_key_value", "setup_caches")),
    ("rule:optimizer", "optimizer_state", ("optimizer", ".step(")),
    ("rule:parameter", "parameter", ("reset_parameters", "to_empty", "load_state_dict", "build_model")),
    ("rule:backward", "gradient", ("backward", "autograd")),
)


def _hits(text: str) -> frozenset[int]:
    """The rules (positions in RULES) that a name matches, lower-cased."""
    low = text.lower()
    return frozenset(i for i, (_, _, words) in enumerate(RULES) if any(w in low for w in words))


class _Rules:
    """The first rule matching any name around an allocation; each distinct stage, op and stack
    is matched once (a stack by identity: loaders intern them)."""

    def __init__(self) -> None:
        self.texts: dict[str, frozenset[int]] = {}
        self.stacks: dict[int, frozenset[int]] = {}
        self.hold: list[object] = []  # the stacks whose id is a key, kept alive

    def _text(self, text: str) -> frozenset[int]:
        found = self.texts.get(text)
        if found is None:
            found = self.texts[text] = _hits(text)
        return found

    def of(self, e: MemoryEvent) -> tuple[str, str] | None:
        frames = self.stacks.get(id(e.frames))
        if frames is None:
            frames = self.stacks[id(e.frames)] = _hits(" ".join(
                [*(f.name for f in e.frames), *(f.filename for f in e.frames)]))
            self.hold.append(e.frames)
        hits = frames | self._text(e.stage) | self._text(e.op)
        if not hits:
            return None
        src, cat, _ = RULES[min(hits)]
        return src, cat


def categorize_lives(events: Sequence[MemoryEvent], made: Sequence[int], freed: Sequence[int]
                     ) -> tuple[list[str], list[str]]:
    """(category, how it was decided) of every allocation, by the order above. Allocation i was
    made by events[made[i]] and ended by events[freed[i]] (-1: never; MemoryTimeline.made_at /
    freed_at). The name rules run once per distinct (stage, op, stack), not per allocation."""
    same_op = any(events[p].op_id >= 0 for p in made)
    rules = _Rules()
    cats: list[str] = []
    sources: list[str] = []
    for p, f in zip(made, freed, strict=True):
        e = events[p]
        if e.category != "unknown":
            cats.append(e.category)
            sources.append("input")
            continue
        found = rules.of(e)
        if found is None and same_op and f >= 0 and e.op_id >= 0 and e.op_id == events[f].op_id:
            found = ("rule:same-op", "temporary")
        cats.append(found[1] if found else "unknown")
        sources.append(found[0] if found else "none")
    return cats, sources


@dataclass(frozen=True, slots=True)
class CategoryTotal:
    category: str
    alive_at_peak_bytes: int  # bytes of this category alive at the peak
    allocated_bytes: int  # bytes allocated over the whole input
    count: int  # allocations over the whole input
    sources: tuple[str, ...]  # how they were decided


def category_totals(categories: Sequence[str], sources: Sequence[str], sizes_bytes: Sequence[int],
                    alive: npt.NDArray[np.bool_]) -> list[CategoryTotal]:
    """Per category: bytes alive at the peak, bytes and count over the input; largest first.
    One entry per allocation in each argument (`alive`: alive at the peak)."""
    names, code = np.unique(np.asarray(categories, dtype=object), return_inverse=True)
    size = np.asarray(sizes_bytes, dtype=np.int64)
    at_peak = np.zeros(len(names), dtype=np.int64)  # int64 sums (bincount's weights are float64)
    total = np.zeros(len(names), dtype=np.int64)
    np.add.at(at_peak, code, np.where(alive, size, 0))
    np.add.at(total, code, size)
    count = np.bincount(code, minlength=len(names))
    how: dict[str, set[str]] = {}
    for c, s in set(zip(categories, sources, strict=True)):
        how.setdefault(c, set()).add(s)
    rows = [CategoryTotal(str(c), int(at_peak[i]), int(total[i]), int(count[i]), tuple(sorted(how[str(c)])))
            for i, c in enumerate(names)]
    return sorted(rows, key=lambda r: (-r.alive_at_peak_bytes, -r.allocated_bytes, r.category))
