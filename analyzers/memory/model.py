"""Typed records of memory analysis: what every memory loader produces and every analysis reads.

Loaders (analyzers.loaders.memory: torch snapshot pickles, Kineto traces with `profile_memory`,
later XLA allocator timelines) turn their input into `MemoryEvent`s (one allocator action each)
and, where the input has them, `Segment`s (the allocator's reserved memory at one moment, each
split into `Block`s). `replay.replay_events` turns events into a `MemoryTimeline`;
`fragmentation.fragmentation` turns segments into a `Fragmentation`.

Every size is in bytes (`_bytes`), every time in nanoseconds (`_ns`), addresses are integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

# the actions of a MemoryEvent (torch's TraceEntry actions; Kineto's become alloc / free)
ALLOC = "alloc"  # a block handed to a tensor: allocated and active grow
FREE_REQUESTED = "free_requested"  # the tensor let it go: allocated shrinks, active stays (stream use)
FREE_COMPLETED = "free_completed"  # the allocator may reuse it: active shrinks
FREE = "free"  # both at once (Kineto, allocators without stream-ordered frees)
SEGMENT_ALLOC = "segment_alloc"  # cudaMalloc: reserved grows
SEGMENT_FREE = "segment_free"  # cudaFree (empty_cache, OOM retry): reserved shrinks
SEGMENT_MAP = "segment_map"  # expandable segment grew
SEGMENT_UNMAP = "segment_unmap"  # expandable segment shrank
SNAPSHOT = "snapshot"  # the moment the snapshot was taken (no change)
OOM = "oom"  # an allocation that failed: size requested, addr = bytes free on the device
ACTIONS = (ALLOC, FREE_REQUESTED, FREE_COMPLETED, FREE, SEGMENT_ALLOC, SEGMENT_FREE,
           SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM)

# categories of an allocation, and how one was decided (Allocation.category_source)
CATEGORIES = ("parameter", "activation", "gradient", "optimizer_state", "kv_cache", "temporary",
              "input", "autograd_detail", "unknown")


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame of an allocation (innermost first in a stack)."""

    name: str
    filename: str = ""
    line: int = 0

    def label(self) -> str:
        if self.filename and self.filename != "none":
            return f"{self.name} ({self.filename}:{self.line})"
        return self.name


Stack = tuple[Frame, ...]


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One allocator action, in input order.

    `index`: its position among the input's memory events; `time_ns`: when (None when the input
    has no times, e.g. a snapshot recorded without them); `addr`, `size_bytes` (>= 0) of the
    block or segment; `device` ("cuda:0", "cpu"); `stage`: the innermost NVTX /
    record_function range around it, "" when unknown; `op`: the enclosing CPU operator (Kineto);
    `category`: what the input says the memory is ("unknown" when it says nothing);
    `reported_allocated_bytes` / `reported_reserved_bytes`: the profiler's own running totals
    after this event (Kineto's "Total Allocated" / "Total Reserved"), None when absent.
    """

    index: int
    action: str
    addr: int
    size_bytes: int
    device: str = "cuda:0"
    time_ns: int | None = None
    stream: int = 0
    frames: Stack = ()
    stage: str = ""
    op: str = ""
    op_id: int = -1  # which call of `op` (its position in the input), -1 when none
    category: str = "unknown"
    reported_allocated_bytes: int | None = None
    reported_reserved_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Allocation:
    """One allocation's life in a replay: made at event `alloc_index`, freed at `free_index`
    (None: still alive at the end of the input)."""

    addr: int
    size_bytes: int
    alloc_index: int
    free_index: int | None
    time_ns: int | None
    frames: Stack = ()
    stage: str = ""
    op: str = ""
    category: str = "unknown"
    category_source: str = "none"  # "input" (the file said so), a rule name, or "none"


@dataclass(frozen=True, slots=True)
class Block:
    """A piece of a segment: `state` is torch's "active_allocated" (a live tensor),
    "active_pending_free" (freed, waiting for its stream) or "inactive" (free for reuse)."""

    addr: int
    size_bytes: int
    state: str
    requested_bytes: int = 0
    frames: Stack = ()

    @property
    def is_free(self) -> bool:
        return self.state == "inactive"


@dataclass(frozen=True, slots=True)
class Segment:
    """One reservation from the device (a cudaMalloc, or an expandable segment's mapped part).

    `pool_id`: torch's segment_pool_id; (0, 0) is the default pool, anything else a private
    pool (CUDA graphs, `torch.cuda.MemPool`). `segment_type`: "large" / "small" (torch's two
    pools by block size), "" when unknown.
    """

    addr: int
    total_bytes: int
    device: str = "cuda:0"
    stream: int = 0
    segment_type: str = ""
    pool_id: tuple[int, int] = (0, 0)
    is_expandable: bool = False
    blocks: tuple[Block, ...] = ()

    @property
    def allocated_bytes(self) -> int:
        return sum(b.size_bytes for b in self.blocks if b.state == "active_allocated")

    @property
    def free_bytes(self) -> int:
        return sum(b.size_bytes for b in self.blocks if b.is_free)

    @property
    def is_private_pool(self) -> bool:
        return self.pool_id != (0, 0)


@dataclass(frozen=True, slots=True)
class Peak:
    """The moment allocated bytes were highest (the first such event), what was alive then."""

    event_index: int  # position in MemoryTimeline's series (-1: no events)
    time_ns: int | None
    allocated_bytes: int
    reserved_bytes: int
    alive: tuple[Allocation, ...]  # allocations made in the input and alive at the peak
    baseline_bytes: int  # allocated before the input's first event (not attributable)


@dataclass(frozen=True)
class MemoryTimeline:
    """The allocator state after every event of one device, from `replay.replay_events`.

    Series (one value per event, in event order): `time_ns` (None entries when the input has no
    times), `allocated_bytes` (bytes in blocks handed to tensors), `active_bytes` (allocated plus
    blocks freed but waiting for their stream), `reserved_bytes` (bytes in segments; a running sum
    from the first reported or replayed value). `baseline_bytes`: allocated before the first event
    (inferred from the profiler's own total, or from frees of blocks never allocated in the
    input). `reported_mismatches`: events where the replayed allocated total differs from the
    input's own running total (0 when the replay reproduces it, or the input has none).
    Allocations, columnar: `made_at[i]` is the series position of allocation i's alloc event (in
    order), `freed_at[i]` of the event that ended it (-1: alive at the end); `allocations` makes
    the records from them on first use (a million-event input has ~10^5-10^6 of them).
    """

    device: str
    event_index: list[int]
    time_ns: list[int | None]
    allocated_bytes: list[int]
    active_bytes: list[int]
    reserved_bytes: list[int]
    made_at: list[int]
    freed_at: list[int]
    peak: Peak
    baseline_bytes: int = 0
    reported_checked: int = 0
    reported_mismatches: int = 0
    first_mismatch: int | None = None  # event index of the first mismatch
    unmatched_frees: int = 0  # frees of addresses with no allocation in the input
    impossible: dict[str, int] = field(default_factory=dict)  # what the input got wrong -> how often
    oom_events: list[MemoryEvent] = field(default_factory=list)
    events: Sequence[MemoryEvent] = field(default=(), repr=False, compare=False)  # the replayed events

    def __len__(self) -> int:
        return len(self.event_index)

    @cached_property
    def allocations(self) -> list[Allocation]:
        """Every allocation's life, in order of its alloc event (category as the input says)."""
        return [allocation_of(self.events, m, f) for m, f in zip(self.made_at, self.freed_at, strict=True)]


def allocation_of(events: Sequence[MemoryEvent], made: int, freed: int, category: str | None = None,
                  source: str | None = None) -> Allocation:
    """The Allocation made by events[made] and ended by events[freed] (-1: never); its category
    the input's unless given."""
    e = events[made]
    if category is None:
        category, source = e.category, "input" if e.category != "unknown" else "none"
    return new_allocation(e.addr, e.size_bytes, e.index, events[freed].index if freed >= 0 else None, e.time_ns,
                          e.frames, e.stage, e.op, category, source or "none")


# Fast constructors of the two records made by the million. A frozen dataclass's __init__ sets
# every field through object.__setattr__; setting the slots through their descriptors makes the
# same object (equal, frozen afterwards) in about half the time. Every field is given, in order
# (tests/analyzers/memory/test_fast_records.py holds them to the dataclass constructors).
_new = object.__new__
_EV = tuple(MemoryEvent.__dict__[n].__set__ for n in MemoryEvent.__slots__)
_AL = tuple(Allocation.__dict__[n].__set__ for n in Allocation.__slots__)


def new_event(index: int, action: str, addr: int, size_bytes: int, device: str, time_ns: int | None, stream: int,
              frames: Stack, stage: str, op: str, op_id: int, category: str,
              reported_allocated_bytes: int | None, reported_reserved_bytes: int | None) -> MemoryEvent:
    """MemoryEvent(every field, positionally), made faster."""
    e = _new(MemoryEvent)
    s = _EV
    s[0](e, index); s[1](e, action); s[2](e, addr); s[3](e, size_bytes); s[4](e, device)  # noqa: E702
    s[5](e, time_ns); s[6](e, stream); s[7](e, frames); s[8](e, stage); s[9](e, op)  # noqa: E702
    s[10](e, op_id); s[11](e, category); s[12](e, reported_allocated_bytes)  # noqa: E702
    s[13](e, reported_reserved_bytes)
    return e  # type: ignore[no-any-return]


def new_allocation(addr: int, size_bytes: int, alloc_index: int, free_index: int | None, time_ns: int | None,
                   frames: Stack, stage: str, op: str, category: str, category_source: str) -> Allocation:
    """Allocation(every field, positionally), made faster."""
    a = _new(Allocation)
    s = _AL
    s[0](a, addr); s[1](a, size_bytes); s[2](a, alloc_index); s[3](a, free_index); s[4](a, time_ns)  # noqa: E702
    s[5](a, frames); s[6](a, stage); s[7](a, op); s[8](a, category); s[9](a, category_source)  # noqa: E702
    return a  # type: ignore[no-any-return]
