"""`perfkit memory` in the terminal: summary, categories, the peak's allocations, ops,
fragmentation (each number with its definition), OOM explanations; tables fit `width`.
Every name from the input goes through the table's terminal escaping (terminal_safe)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from perfkit.analyzers.memory.analysis import MemoryAnalysis
from perfkit.analyzers.memory.diff import Delta, MemoryDiff
from perfkit.analyzers.memory.downsample import downsample
from perfkit.analyzers.memory.oom import OomExplanation
from perfkit.analyzers.memory.peak import Share, stack_top
from perfkit.core.terminal import terminal_safe
from perfkit.core.text_table import Column, table_text
from perfkit.reports.memory.rows import fragmentation_rows, oom_rows
from perfkit.reports.memory.units import fmt_bytes


def _time(t: int | None, t0: int | None) -> str:
    return "-" if t is None or t0 is None else f"{(t - t0) / 1e6:.3f} ms"


def _shares(title: str, rows: Sequence[Share], top: int, width: int | None) -> list[str]:
    rows = rows[:top] if top else rows
    if not rows:
        return []
    return [title, table_text([Column("bytes", [fmt_bytes(s.bytes) for s in rows]),
                               Column("allocs", [str(s.count) for s in rows]),
                               Column("where", [s.key for s in rows], right=False)], width), ""]


def summary_lines(a: MemoryAnalysis) -> list[str]:
    t, p = a.timeline, a.timeline.peak
    t0 = next((x for x in t.time_ns if x is not None), None)
    lines = [f"{terminal_safe(a.path)}: {a.kind}, device {terminal_safe(a.device)} "
             f"(of {', '.join(map(terminal_safe, a.devices))}), {len(t)} events",
             f"peak allocated {fmt_bytes(p.allocated_bytes)} at event {p.event_index} "
             f"({_time(p.time_ns, t0)}); reserved then {fmt_bytes(p.reserved_bytes)}; "
             f"{len(p.alive)} allocations alive, {fmt_bytes(p.baseline_bytes)} from before the input",
             f"allocated at the end {fmt_bytes(t.allocated_bytes[-1] if len(t) else 0)}, "
             f"reserved at the end {fmt_bytes(t.reserved_bytes[-1] if len(t) else 0)}"]
    if t.reported_checked:
        lines.append(f"replay check: {t.reported_checked - t.reported_mismatches} of {t.reported_checked} "
                     "events match the input's own running total"
                     + (f" (first mismatch at event {t.first_mismatch})" if t.reported_mismatches else ""))
    if t.unmatched_frees:
        lines.append(f"{t.unmatched_frees} frees of blocks allocated before the input began")
    lines.extend(f"impossible in the input, {n} x: {what}" for what, n in t.impossible.items())
    lines.extend(f"not measured: {terminal_safe(n)}" for n in a.notes)
    if a.skipped_actions:
        lines.append("skipped trace actions: " + ", ".join(
            f"{terminal_safe(k)} x{v}" for k, v in sorted(a.skipped_actions.items())))
    return [*lines, ""]


def timeline_lines(a: MemoryAnalysis, width: int | None) -> list[str]:
    s = downsample(a.timeline, 12)
    if not s.position:
        return []
    t0 = next((x for x in a.timeline.time_ns if x is not None), None)
    return ["Timeline (the highest event of 12 equal slices; active = allocated + freed blocks "
            "waiting for their stream):",
            table_text([Column("event", [str(p) for p in s.position]),
                        Column("time", [_time(x, t0) for x in s.time_ns]),
                        Column("allocated", [fmt_bytes(x) for x in s.allocated_bytes]),
                        Column("active", [fmt_bytes(x) for x in s.active_bytes]),
                        Column("reserved", [fmt_bytes(x) for x in s.reserved_bytes])], width), ""]


def category_lines(a: MemoryAnalysis, width: int | None) -> list[str]:
    c = a.categories
    if not c:
        return []
    return ["Categories (decided by: input = the file says so, rule:* = names, none = unknown):",
            table_text([Column("category", [x.category for x in c], right=False),
                        Column("at peak", [fmt_bytes(x.alive_at_peak_bytes) for x in c]),
                        Column("allocated", [fmt_bytes(x.allocated_bytes) for x in c]),
                        Column("allocs", [str(x.count) for x in c]),
                        Column("decided by", [", ".join(x.sources) for x in c], right=False)], width), ""]


def alive_lines(a: MemoryAnalysis, top: int, width: int | None) -> list[str]:
    rows = a.alive[:top] if top else a.alive
    if not rows:
        return []
    return [f"Alive at the peak ({len(a.alive)} allocations, largest first):",
            table_text([Column("bytes", [fmt_bytes(x.size_bytes) for x in rows]),
                        Column("category", [x.category for x in rows], right=False, drop_rank=2),
                        Column("stage", [x.stage or "-" for x in rows], right=False, drop_rank=1),
                        Column("stack top", [stack_top(x) for x in rows], right=False)], width), ""]


def op_lines(a: MemoryAnalysis, top: int, width: int | None) -> list[str]:
    rows = a.ops[:top] if top else a.ops
    if not rows:
        return []
    return ["Operators (peak = highest rise during one call; net = end - start, summed over calls):",
            table_text([Column("op", [x.op for x in rows], right=False),
                        Column("calls", [str(x.calls) for x in rows], drop_rank=1),
                        Column("peak", [fmt_bytes(x.peak_bytes) for x in rows]),
                        Column("net", [fmt_bytes(x.net_bytes, sign=True) for x in rows]),
                        Column("allocated", [fmt_bytes(x.allocated_bytes) for x in rows], drop_rank=2)],
                       width), ""]


NO_SEGMENTS = {"kineto": "a Kineto trace", "xla-allocator": "an XLA allocator timeline"}


def fragmentation_lines(a: MemoryAnalysis, width: int | None) -> list[str]:
    if a.fragmentation is None:
        kind = NO_SEGMENTS.get(a.kind, terminal_safe(a.kind))
        return [f"Fragmentation: the input holds no segments ({kind}); pass a snapshot", ""]
    rows = fragmentation_rows(a.fragmentation)
    hist = a.fragmentation.segment_histogram
    out = ["Fragmentation (each number's definition beside it):",
           table_text([Column("number", [r[0] for r in rows], right=False), Column("value", [r[1] for r in rows]),
                       Column("definition", [r[2] for r in rows], right=False)], width), ""]
    if hist:
        out += ["Segment sizes (bucket [size, 2 x size)):",
                table_text([Column("size from", [fmt_bytes(h.low_bytes) for h in hist]),
                            Column("segments", [str(h.count) for h in hist]),
                            Column("bytes", [fmt_bytes(h.total_bytes) for h in hist])], width), ""]
    return out


def oom_lines(ooms: Sequence[OomExplanation], width: int | None) -> list[str]:
    out = []
    for i, o in enumerate(ooms):
        rows = oom_rows(o)
        out += [f"Out of memory #{i + 1}" + (f" on {terminal_safe(o.facts.device)}" if o.facts.device else "") + ":",
                table_text([Column("number", [r[0] for r in rows], right=False),
                            Column("value", [r[1] for r in rows], right=False)], width),
                o.text, ""]
    return out


def fit_lines(lines: Sequence[str], width: int | None) -> str:
    """Sentences (not table lines, which hold a two-space gap) wrapped to `width`."""
    out = []
    for line in lines:
        if width is not None and len(line) > width and "  " not in line:
            out.extend(textwrap.wrap(line, width, subsequent_indent="  "))
        else:
            out.append(line)
    return "\n".join(out).rstrip() + "\n"


def memory_text(a: MemoryAnalysis, top: int = 10, width: int | None = 80) -> str:
    lines = [*summary_lines(a), *timeline_lines(a, width), *category_lines(a, width),
             *alive_lines(a, top, width), *_shares("Alive at the peak by stack top:", a.by_stack_top, top, width),
             *_shares("Alive at the peak by stage (record_function / NVTX):", a.by_stage, top, width),
             *op_lines(a, top, width), *fragmentation_lines(a, width), *oom_lines(a.ooms, width)]
    return fit_lines(lines, width)


def _delta_table(title: str, rows: Sequence[Delta], top: int, width: int | None) -> list[str]:
    rows = rows[:top] if top else rows
    if not rows:
        return [f"{title} no change", ""]
    return [title, table_text([Column("A", [fmt_bytes(d.a_bytes) for d in rows]),
                               Column("B", [fmt_bytes(d.b_bytes) for d in rows]),
                               Column("B - A", [fmt_bytes(d.delta_bytes, sign=True) for d in rows]),
                               Column("what", [d.key for d in rows], right=False)], width), ""]


def diff_text(d: MemoryDiff, top: int = 10, width: int | None = 80) -> str:
    lines = [f"A = {terminal_safe(d.a_path)}", f"B = {terminal_safe(d.b_path)}", "",
             *_delta_table("Peak:", [d.peak, d.reserved_at_peak], 0, width),
             *_delta_table("Per category (alive at the peak):", d.categories, top, width),
             *_delta_table("Per op (peak rise during one call):", d.ops, top, width),
             *_delta_table("Per stack top (alive at the peak):", d.stack_tops, top, width)]
    return fit_lines(lines, width)
