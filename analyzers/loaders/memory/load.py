"""Any memory input -> one `MemoryInput` (events, and segments where the input has them).

    from perfkit.analyzers.loaders.memory.load import load_memory_input
    source = load_memory_input("snapshot.pickle")

Chosen by content: a pickle (first byte 0x80) is a torch memory snapshot; JSON whose top level
holds `segments` / `device_traces` is a snapshot saved as JSON; any other JSON (or .json.gz) is
a Kineto trace whose `[memory]` events are read; a `*.xplane.pb` is an XSpace whose XLA allocator
events are read (loaders.memory.xla). A new input kind adds a loader to LOADERS and a test in
`detect`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from perfkit.analyzers.loaders.memory.kineto_memory import memory_events_from_trace
from perfkit.analyzers.loaders.memory.snapshot import load_snapshot, snapshot_from_data
from perfkit.analyzers.memory.gc_paused import gc_paused
from perfkit.analyzers.memory.model import MemoryEvent, Segment
from perfkit.core.errors import TraceError
from perfkit.core.json_file import parse_json_bytes

SNIFF_BYTES = 4096
MAX_JSON_BYTES = 4 << 30  # a JSON snapshot is parsed whole (Python objects: about ten times its bytes)


@dataclass(frozen=True)
class MemoryInput:
    path: str
    kind: str  # "torch-snapshot", "torch-snapshot-json", "kineto", "xla-allocator"
    events: list[MemoryEvent]
    segments: list[Segment] | None  # None: the input says nothing about segments
    skipped_actions: dict[str, int]
    notes: tuple[str, ...] = ()  # what the input does not record (shown with the summary)


def _snapshot(path: Path) -> MemoryInput:
    snap = load_snapshot(path)
    return MemoryInput(str(path), "torch-snapshot", snap.events, snap.segments, snap.skipped_actions)


def _json_bytes(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic; TraceError past `limit`
    bytes (read in blocks: a gzip bomb stops there)."""
    with open(path, "rb") as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
        src: IO[bytes] = gzip.GzipFile(fileobj=fh) if gzipped else fh  # type: ignore[assignment]
        parts, n = [], 0
        try:
            while n <= limit and (block := src.read(1 << 24)):
                parts.append(block)
                n += len(block)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise TraceError(f"{path}: damaged gzip ({exc}); copy the file again") from None
    if n > limit:
        raise TraceError(f"{path}: {'gunzips to' if gzipped else 'holds'} more than {limit:,} bytes of JSON; "
                         "save the snapshot as a pickle (torch.cuda.memory._dump_snapshot)")
    return b"".join(parts)


def _snapshot_json(path: Path) -> MemoryInput:
    data = parse_json_bytes(_json_bytes(path), path, "pass a torch memory snapshot or a Kineto trace", TraceError)
    snap = snapshot_from_data(data, path)
    return MemoryInput(str(path), "torch-snapshot-json", snap.events, snap.segments, snap.skipped_actions)


def _kineto(path: Path) -> MemoryInput:
    events = memory_events_from_trace(path)
    if not events:
        raise TraceError(f"{path}: no [memory] events; record the trace with "
                         "torch.profiler.profile(profile_memory=True) or pass a memory snapshot")
    return MemoryInput(str(path), "kineto", events, None, {})


def _xla(path: Path) -> MemoryInput:
    # imported here: the XSpace reader (and pandas under it) only for .xplane.pb inputs
    from perfkit.analyzers.loaders.memory.xla import (
        RESERVED_NOTE,
        memory_events_from_xspace,
        reserved_recorded,
    )

    events = memory_events_from_xspace(path)
    notes = () if reserved_recorded(events) else (RESERVED_NOTE,)
    return MemoryInput(str(path), "xla-allocator", events, None, {}, notes)


LOADERS: dict[str, Callable[[Path], MemoryInput]] = {
    "torch-snapshot": _snapshot, "torch-snapshot-json": _snapshot_json, "kineto": _kineto, "xla-allocator": _xla}
XLA_SUFFIX = ".xplane.pb"


def detect(path: Path) -> str:
    if path.name.endswith(XLA_SUFFIX):
        return "xla-allocator"
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    if head[:1] == b"\x80":
        return "torch-snapshot"
    gz_magic = head[:2] == b"\x1f\x8b"
    if gz_magic:
        try:
            with gzip.open(path, "rb") as gz:
                head = gz.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error):
            raise TraceError(f"{path}: damaged gzip; re-export the trace") from None
    text = head.lstrip()
    if not text:
        raise TraceError(f"{path}: the file is empty{' (once gunzipped)' if gz_magic else ''}; "
                         "pass a torch memory snapshot or a Kineto trace with profile_memory=True")
    if text[:1] not in (b"{", b"["):
        raise TraceError(f"{path}: neither a pickle nor JSON; pass a torch memory snapshot "
                         "(torch.cuda.memory._dump_snapshot), a Kineto trace with profile_memory=True "
                         "or a JAX/XLA .xplane.pb")
    if (b'"segments"' in head or b'"device_traces"' in head) and b'"traceEvents"' not in head:
        return "torch-snapshot-json"
    return "kineto"


def load_memory_input(path: str | Path) -> MemoryInput:
    p = Path(path)
    if p.is_dir():
        raise TraceError(f"{p}: a directory; pass a memory snapshot or a trace file")
    with gc_paused():
        try:
            return LOADERS[detect(p)](p)
        except RecursionError:  # a value nested deeper than any check above foresaw: one line all the same
            raise TraceError(f"{p}: a value nested too deeply to read; pass a memory snapshot "
                             "(torch.cuda.memory._dump_snapshot) or a trace as the tool wrote it") from None
