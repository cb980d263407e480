"""A memory analysis cut to what a page draws (the dashboard's Memory page): small, plain data.

    from perfkit.reports.memory.view import memory_view
    view = memory_view(analysis)          # MemoryView: a few thousand numbers, whatever the input size

The timeline keeps at most TIMELINE_POINTS points (each the highest event of its slice, so the
peak survives; analyzers.memory.downsample), the peak table the ALIVE_ROWS largest allocations,
the segment map the SEGMENTS_DRAWN largest segments. Numbers stay numbers (bytes, ms); the
fragmentation rows carry their definitions from reports.memory_rows, the one wording every
memory view shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfkit.analyzers.memory.analysis import MemoryAnalysis
from perfkit.analyzers.memory.downsample import downsample
from perfkit.analyzers.memory.peak import stack_top
from perfkit.reports.memory.rows import fragmentation_rows, oom_rows
from perfkit.reports.memory.units import fmt_bytes

TIMELINE_POINTS = 4000
ALIVE_ROWS = 500
SEGMENTS_DRAWN = 100
BLOCKS_DRAWN = 20_000


@dataclass(frozen=True)
class MemoryView:
    path: str
    kind: str
    device: str
    devices: list[str]
    events: int
    summary: list[tuple[str, str]]  # (what, value as text)
    notes: list[str]
    x: list[float]  # timeline points: ms since the first event, or event positions without times
    x_unit: str  # "ms" or "event"
    allocated_bytes: list[int]
    active_bytes: list[int]
    reserved_bytes: list[int]
    peak_x: float
    alive_columns: tuple[str, ...]
    alive_rows: list[tuple[int, str, str, str, str]]  # bytes, size text, category, stage, top frame
    alive_total: int
    category_rows: list[tuple[str, str, str, int, str]]  # category, at peak, allocated, allocs, decided by
    fragmentation_rows: list[tuple[str, str, str]]  # name, value, definition
    segment_rows: list[tuple[int, str, int, int, str]]  # segment, label, block offset, size, state
    segments_total: int
    oom_rows: list[list[tuple[str, str]]]


def _x(a: MemoryAnalysis, times: list[int | None], positions: list[int]) -> tuple[list[float], str, float]:
    t0 = next((t for t in a.timeline.time_ns if t is not None), None)
    peak = a.timeline.peak
    if t0 is not None and all(t is not None for t in times):
        at_peak = peak.time_ns if peak.time_ns is not None else t0
        return [((t or 0) - t0) / 1e6 for t in times], "ms", (at_peak - t0) / 1e6
    return [float(p) for p in positions], "event", float(max(peak.event_index, 0))


def _segments(a: MemoryAnalysis) -> list[tuple[int, str, int, int, str]]:
    rows: list[tuple[int, str, int, int, str]] = []
    biggest = sorted(a.segments or [], key=lambda g: -g.total_bytes)[:SEGMENTS_DRAWN]
    for i, g in enumerate(biggest):
        label = f"#{i} {fmt_bytes(g.total_bytes)}" + (" (pool)" if g.is_private_pool else "") + (
            " (expandable)" if g.is_expandable else "")
        offset = 0
        for b in g.blocks:
            if len(rows) >= BLOCKS_DRAWN:
                return rows
            rows.append((i, label, offset, b.size_bytes, b.state))
            offset += b.size_bytes
    return rows


def memory_view(a: MemoryAnalysis) -> MemoryView:
    t, p = a.timeline, a.timeline.peak
    s = downsample(t, TIMELINE_POINTS)
    x, unit, peak_x = _x(a, s.time_ns, s.position)
    summary = [
        ("peak allocated", fmt_bytes(p.allocated_bytes)),
        ("reserved at the peak", fmt_bytes(p.reserved_bytes)),
        ("allocations alive at the peak", f"{len(p.alive):,}"),
        ("from before the input", fmt_bytes(p.baseline_bytes)),
        ("allocated at the end", fmt_bytes(t.allocated_bytes[-1] if len(t) else 0)),
        ("events", f"{len(t):,}"),
    ]
    if t.reported_checked:
        summary.append(("replay check", f"{t.reported_checked - t.reported_mismatches:,} of "
                        f"{t.reported_checked:,} events match the input's own total"))
    summary += [("impossible in the input", f"{n:,} x {what}") for what, n in t.impossible.items()]
    return MemoryView(
        path=a.path, kind=a.kind, device=a.device, devices=list(a.devices), events=len(t), summary=summary,
        notes=list(a.notes), x=x, x_unit=unit, allocated_bytes=s.allocated_bytes, active_bytes=s.active_bytes,
        reserved_bytes=s.reserved_bytes, peak_x=peak_x,
        alive_columns=("bytes", "size", "category", "stage", "top frame"),
        alive_rows=[(x.size_bytes, fmt_bytes(x.size_bytes), x.category, x.stage or "-", stack_top(x))
                    for x in a.alive[:ALIVE_ROWS]],
        alive_total=len(a.alive),
        category_rows=[(c.category, fmt_bytes(c.alive_at_peak_bytes), fmt_bytes(c.allocated_bytes), c.count,
                        ", ".join(c.sources)) for c in a.categories],
        fragmentation_rows=fragmentation_rows(a.fragmentation) if a.fragmentation is not None else [],
        segment_rows=_segments(a), segments_total=len(a.segments or []),
        oom_rows=[oom_rows(o) for o in a.ooms])
