"""A range (record_function / NVTX annotation, e.g. perfkit serve's `perfkit_attention`) -> the
entry that replays the op naming its class inside it.

The ops inside one instance of the range are the CPU ops of its thread that start and end within
it. Order of choice: an attention op (the outermost: the SDPA call, not the kernel it dispatched
to), else a MoE layer (aten::topk inside: moe.py), else the op with the most self-contained time
among those a kind runs (GEMM, norms, fused experts), named in a note with its share.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.replay.attention import attention_entry, is_attention
from perfkit.analyzers.replay.classify import entry_for
from perfkit.analyzers.replay.entry import Built, unknown
from perfkit.analyzers.replay.moe import moe_from_range
from perfkit.analyzers.replay.op_call import OpCall

OpCallReader = Callable[[EventTable, int], OpCall]


def inside(table: EventTable, row: int) -> np.ndarray:
    """The CPU-op rows inside range `row` (same process and thread), in start order."""
    ts, end = int(table["ts_ns"][row]), int(table["ts_ns"][row]) + int(table["dur_ns"][row])
    m = (table.mask_kind(Kind.CPU_OP) & (table["pid"] == table["pid"][row]) & (table["tid"] == table["tid"][row])
         & (table["ts_ns"] >= ts) & (table["ts_ns"].astype(np.int64) + table["dur_ns"].astype(np.int64) <= end))
    rows = np.flatnonzero(m)
    return rows[np.lexsort((-table["dur_ns"][rows].astype(np.int64), table["ts_ns"][rows]))]


def range_entry(table: EventTable, row: int, read: OpCallReader) -> Built:
    rows = inside(table, row)
    calls = [read(table, int(r)) for r in rows]
    name = table.names[int(table["name_id"][row])]
    attn = next((c for c in calls if is_attention(c.name)), None)
    if attn is not None:
        b = attention_entry(attn)
        b.notes.insert(0, f"the range {name}: its attention op {attn.name}")
        return b
    moe = moe_from_range(calls)
    if moe is not None:
        moe.notes.insert(0, f"the range {name}: the MoE layer its ops ran (aten::topk, router, experts)")
        return moe
    return _heaviest(table, row, rows, calls, name)


def _heaviest(table: EventTable, row: int, rows: np.ndarray, calls: list[OpCall], name: str) -> Built:
    total = int(table["dur_ns"][row])
    best: tuple[int, Built, OpCall] | None = None
    for r, c in zip(rows, calls, strict=True):
        b = entry_for(c)
        if b.entry["kind"] != "FILL" and (best is None or int(table["dur_ns"][r]) > best[0]):
            best = (int(table["dur_ns"][r]), b, c)
    if best is None:
        ops = ", ".join(sorted({c.name for c in calls})[:8]) or "no CPU op"
        return unknown(f"the range {name} runs {ops}: none of them is an op a kind runs; replay one with --op NAME")
    dur, b, c = best
    share = f" ({dur / total:.0%} of the range's time)" if total else ""
    b.notes.insert(0, f"the range {name}: its longest op a kind runs, {c.text()}{share}; "
                      "the range's other ops are not in the spec")
    return b
