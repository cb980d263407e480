"""Kineto (torch.profiler) Chrome traces -> `EventTable`.

    from perfkit.analyzers.loaders.kineto.load import load_trace, load_traces
    table = load_trace("trace.json.gz")            # one file, rank from distributedInfo
    table = load_traces(["rank0.json", "rank1.json"])  # a multi-rank job

Events are decoded with msgspec typed structs that keep only the fields the analyses need
(ph, cat, name, pid, tid, ts, dur and from args: correlation, stream, device, External id,
bytes, Input Dims, Input type, Concrete Inputs); everything else is skipped by the decoder.
The array is read block by block (analyzers.loaders.kineto.json_stream), so memory holds one block of
decoded events at a time plus the growing columns (~90 bytes per kept event).

Timestamps are microseconds in the file, integers (torch < 2.3) or decimals with nanosecond
digits; their text is read exactly (analyzers.loaders.kineto.json_numbers) into int64 nanoseconds (`ts_ns`,
`dur_ns`), sub-nanosecond digits rounded half to even: `1712195495519695.812` us is
1712195495519695812 ns, where a float64 would keep 0.25 us.
Kept: complete events (ph X) except the profiler's own span (cat Trace) and python_function
events (Python stacks, often the bulk of a `with_stack` trace and unused by the analyses).

One odd field never loses the trace. A block whose events do not all match the typed structs
is decoded again with every field read as whatever JSON value it holds (and, if a number is
beyond float range, event by event); then, counted in `TraceMeta.coerced`:
- a string or integral float where an integer is needed (args.bytes "32768") is read as that
  integer; anything else there (null, "n/a", 1.5, a list) becomes -1;
- a name or cat that is not a string becomes its JSON text; args that is not an object is
  ignored; a string pid / tid names its row (as Kineto's "Spans" does);
- ts / dur given as a string holding a number are read exactly.
Dropped, counted by reason in `TraceMeta.dropped` (reasons in DROP_REASONS): an X event with no
ts, a ts or dur that is not a number (null, NaN, "abc"), beyond int64 nanoseconds (1.5e300),
no dur, a negative dur, ts + dur beyond int64; a traceEvents item that is not an object, has no
ph or an unknown ph. `TraceMeta.warnings` locates the first few (`path: traceEvents[i] 'name':
...`, at most MAX_WARNINGS a file, drops first); `TraceMeta.unknown_categories` counts the X
events whose cat perfkit does not read (kept as Kind.OTHER; "(none)" when cat is absent).
Repairs of the bytes themselves (a byte-order mark, invalid UTF-8, NaN literals) are in
analyzers.loaders.kineto.json_stream and counted in `coerced` too.

The loader's parts: analyzers.loaders.kineto.decode (a block of JSON -> event structs: the strict fast
path, the loose fallbacks), analyzers.loaders.kineto.columns (a block's X events and their fields read
into checked columns), analyzers.loaders.kineto.fields (one value coerced; `Notes`: the counts and
located warnings of one file), analyzers.loaders.kineto.build (`Builder`: category -> Kind, interned
names and shapes, the table's columns). This module reads the files and the header.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfkit.analyzers.event_table import EventTable, TraceMeta, concat_tables
from perfkit.analyzers.loaders.kineto.build import Builder
from perfkit.analyzers.loaders.kineto.decode import decode_chunk
from perfkit.analyzers.loaders.kineto.fields import Notes
from perfkit.analyzers.loaders.kineto.json_stream import (
    BLOCK_BYTES,
    StreamResult,
    iter_event_chunks,
)
from perfkit.core.errors import TraceError
from perfkit.core.finite import shown
from perfkit.core.memory import map_large_blocks
from perfkit.core.parallel_map import Executor, parallel_map

MAX_RANK = 2**31  # ranks are int32 in torch.distributed
NO_RANK = "no distributedInfo.rank"


def rank_in(dist: dict[str, Any]) -> tuple[int | None, str]:
    """(the rank `distributedInfo.rank` names, or None; what it says when it is not a plain
    integer rank: '' for one). A numeric string ("3", as some exporters write it) is read as
    that rank and said so; anything else (a negative number, a list, "abc") names no rank."""
    if "rank" not in dist:
        return None, NO_RANK
    value = dist["rank"]
    if type(value) is int and 0 <= value < MAX_RANK:
        return value, ""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,10}", value.strip()) and int(value) < MAX_RANK:
        return int(value), f"distributedInfo.rank is the text {value.strip()[:12]!r}, read as rank {int(value)}"
    return None, f"distributedInfo.rank is {shown(value)}, not a rank (an integer 0 to 2^31 - 1)"


def _meta_from(path: Path, info: dict[str, Any], rank: int | None, events_read: int) -> TraceMeta:
    dist = info.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    file_rank, said = rank_in(dist)
    devices = tuple(
        str(d.get("name", "")) for d in (info.get("deviceProperties") or []) if isinstance(d, dict)
    )
    base = info.get("baseTimeNanoseconds")
    world = dist.get("world_size")
    return TraceMeta(
        path=str(path),
        rank=rank if rank is not None else (file_rank if file_rank is not None else 0),
        world_size=int(world) if isinstance(world, int) else None,
        backend=str(dist["backend"]) if isinstance(dist.get("backend"), str) else None,
        devices=devices,
        base_time_ns=int(base) if isinstance(base, int) else None,
        events_read=events_read,
        rank_in_file=file_rank,
        rank_said=said,
        warnings=(f"{path}: {said}",) if said and said != NO_RANK else (),
    )


def load_trace(
    path: str | Path, rank: int | None = None, block_bytes: int = BLOCK_BYTES, shapes: str = "supported"
) -> EventTable:
    """Load one Kineto trace (.json or .json.gz). `rank` overrides distributedInfo.rank.

    `shapes`: whose `Input Dims` / `Input type` / `Concrete Inputs` to keep: "supported" (the
    CPU ops in analyzers.op_cost.OP_COSTS, what the analyses use), "all" CPU ops, or "none".
    `block_bytes` is how much JSON is decoded at a time (memory vs. per-block overhead).
    """
    map_large_blocks()  # the table's and the analyses' arrays go back to the OS when freed
    if shapes not in ("supported", "all", "none"):
        raise ValueError(f"shapes must be 'supported', 'all' or 'none', not {shapes!r}")
    path = Path(path)
    result: StreamResult[Any] = StreamResult()
    notes = Notes(str(path))
    builder = Builder(shapes, notes)
    was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived structs: the cyclic collector only costs time here
    try:
        for events in iter_event_chunks(path, decode_chunk, result, block_bytes):
            builder.add(events, result.events_read - len(events))
            del events
    finally:
        if was_enabled:
            gc.enable()
    _refuse_eventless(path, notes, result.events_read)
    info = {**result.trailer, **result.header}
    return builder.table(notes.meta(_meta_from(path, info, rank, result.events_read), result))


def _refuse_eventless(path: Path, notes: Notes, events_read: int) -> None:
    """A file none of whose items is an event object is no trace (torch's memory timeline export
    `[[ts, action, bytes, category], ...]` is such a bare array): one line, not empty tables."""
    if events_read and notes.dropped["not an event object"] == events_read:
        first = notes.drop_lines[0].removeprefix(f"{path}: ").removesuffix("; event dropped")
        raise TraceError(f"{path}: not a Chrome / Kineto trace: none of its {events_read:,} items is an event object ({first})")


def load_traces(paths: Sequence[str | Path], executor: Executor | None = None) -> EventTable:
    """Load the rank files of one job into one table (column `rank`).

    Ranks come from each file's distributedInfo; files without one take their position in
    `paths`. Two files claiming the same rank are an error (compare runs with `--vs` instead).
    With an executor the files are decoded in its workers, one file per worker at a time
    (perfkit/core/parallel_map.py); the merged table is the same as one process's.
    """
    if not paths:
        raise TraceError("no trace files given; pass one .json / .json.gz per rank")
    tables = parallel_map(load_trace, list(paths), executor)
    if len(tables) == 1:
        return tables[0]
    named = [t.meta[0] for t in tables]
    if all(m.rank_in_file is None for m in named):  # none names its rank: each takes its place in the list
        tables = [t.with_rank(i) for i, t in enumerate(tables)]
    elif None in (m.rank_in_file for m in named):  # some do: a file that does not cannot be placed among them
        bad = next(m for m in named if m.rank_in_file is None)
        good = next(m for m in named if m.rank_in_file is not None)
        raise TraceError(f"{bad.path}: {bad.rank_said}, while {good.path} names rank {good.rank}; give "
                         "distributedInfo.rank in every rank's file, or in none (ranks then follow the order "
                         "of the files)")
    else:
        seen: dict[int, str] = {}
        for m in named:
            if m.rank in seen:
                raise TraceError(
                    f"{m.path}: rank {m.rank} is also the rank of {seen[m.rank]}; give one file per "
                    "rank (use --vs to compare two runs)"
                )
            seen[m.rank] = m.path
    return concat_tables(tables)
