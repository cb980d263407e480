"""The parts of a rocprofv3 JSON file (`rocprofv3 ... --output-format json`) perfkit reads, as
typed records decoded by msgspec (fields perfkit does not read are skipped while decoding, so no
Python dict is made per record).

Layout (rocprofiler-sdk's cereal serialization): `{"rocprofiler-sdk-tool": [process, ...]}`,
each process with `metadata` (pid, node.hostname), `agents` (CPUs type 1, GPUs type 2),
`strings.buffer_records` (per record kind, at its enum value: the kind's name and operation
names), `kernel_symbols` (kernel_id -> names, registers) and `buffer_records`:
`kernel_dispatch`, `memory_copy`, `hip_api` lists. Times are integer nanoseconds.
`decode_rocprof` turns every decoding failure into one TraceError line naming the file and the
JSON path of what is wrong.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path
from typing import IO

import msgspec

from perfkit.analyzers.loaders.file_head import file_head
from perfkit.core.errors import TraceError, shorten

TOOL_KEY = "rocprofiler-sdk-tool"
GPU_AGENT_TYPE = 2


class Handle(msgspec.Struct):
    handle: int


class Correlation(msgspec.Struct):
    internal: int
    external: int = 0


class Dim3(msgspec.Struct):
    x: int
    y: int
    z: int


class DispatchInfo(msgspec.Struct):
    agent_id: Handle
    queue_id: Handle
    kernel_id: int
    workgroup_size: Dim3
    grid_size: Dim3  # in work-items (HSA), not workgroups
    group_segment_size: int = -1  # LDS bytes per workgroup


class KernelDispatch(msgspec.Struct):
    thread_id: int
    correlation_id: Correlation
    start_timestamp: int
    end_timestamp: int
    dispatch_info: DispatchInfo
    stream_id: Handle | None = None  # HIP stream (newer rocprofv3)


class ApiCall(msgspec.Struct):
    kind: int
    operation: int
    thread_id: int
    correlation_id: Correlation
    start_timestamp: int
    end_timestamp: int


class MemoryCopy(ApiCall):
    """An API call's fields and the copy's agents, bytes and stream."""

    dst_agent_id: Handle
    src_agent_id: Handle
    bytes: int
    stream_id: Handle | None = None


class KernelSymbol(msgspec.Struct):
    kernel_id: int
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""
    arch_vgpr_count: int = -1


class Agent(msgspec.Struct):
    id: Handle
    type: int
    logical_node_type_id: int = -1  # the GPU's index among the GPUs
    name: str = ""  # gfx target ("gfx950")
    product_name: str = ""


class KindNames(msgspec.Struct):
    kind: str
    operations: list[str] = []


class Strings(msgspec.Struct):
    buffer_records: list[KindNames] = []


class Node(msgspec.Struct):
    hostname: str = ""


class Metadata(msgspec.Struct):
    pid: int
    node: Node = msgspec.field(default_factory=Node)


class BufferRecords(msgspec.Struct):
    kernel_dispatch: list[KernelDispatch] = []
    memory_copy: list[MemoryCopy] = []
    hip_api: list[ApiCall] = []


class Process(msgspec.Struct):
    metadata: Metadata
    agents: list[Agent]
    buffer_records: BufferRecords
    strings: Strings = msgspec.field(default_factory=Strings)
    kernel_symbols: list[KernelSymbol] = []


class Document(msgspec.Struct, rename={"tool": TOOL_KEY}):
    tool: list[Process]


_DECODER = msgspec.json.Decoder(Document)
_AT = re.compile(r"^(.*?) - at `\$(.*)`$")


MAX_JSON_BYTES = 16 << 30  # the JSON is decoded whole: a file (or what it gunzips to) beyond this is refused


def _read_up_to(fh: IO[bytes], limit: int) -> bytes:
    """At most `limit` bytes of `fh`, read in blocks (one read(limit) would allocate `limit` at once)."""
    parts, n = [], 0
    while n < limit and (block := fh.read(min(1 << 24, limit - n))):
        parts.append(block)
        n += len(block)
    return b"".join(parts)


def read_bytes(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic bytes; TraceError beyond
    `limit` bytes (a gzip bomb stops there, before it fills memory)."""
    try:
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            if gzipped:
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = _read_up_to(gz, limit + 1)  # type: ignore[arg-type]  # GzipFile reads bytes
            else:
                data = _read_up_to(fh, limit + 1)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror}); check the path") from exc
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise TraceError(f"{path}: damaged gzip data ({exc}); copy the file again or gunzip it to see what is left") \
            from exc
    if len(data) > limit:
        raise TraceError(f"{path}: {'gunzips to' if gzipped else 'holds'} more than {limit:,} bytes of JSON; "
                         "trace fewer steps (rocprofv3 --collection-period) or split the run")
    return data


def decode_rocprof(path: Path) -> Document:
    """The typed document of one rocprofv3 JSON file; TraceError (one line) when it is not one."""
    try:
        return _DECODER.decode(read_bytes(path))
    except msgspec.ValidationError as exc:
        m = _AT.match(str(exc))
        what, where = (m.group(1), m.group(2).lstrip(".")) if m else (str(exc), "")
        raise TraceError(f"{path}: {shorten(where or 'top level', 120)}: {shorten(what, 120)}; not the rocprofv3 "
                         "JSON layout perfkit reads (rocprofv3 --output-format json): write the trace again") from exc
    except RecursionError:
        raise TraceError(f"{path}: nested too deeply to decode; not the rocprofv3 JSON layout perfkit reads "
                         "(rocprofv3 --output-format json): write the trace again") from None
    except msgspec.DecodeError as exc:
        reason = shorten(str(exc), 120)
        hint = "the file is cut short: copy it again" if "truncated" in reason else "not valid JSON"
        raise TraceError(f"{path}: {reason}; {hint}") from exc


SNIFF_BYTES = 4096


def is_rocprof_json(path: str | Path) -> bool:
    """True when the file (gzipped or not) starts as a rocprofv3 JSON: `{"rocprofiler-sdk-tool"`."""
    head = file_head(path, SNIFF_BYTES)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n{").startswith(f'"{TOOL_KEY}"'.encode())
