"""Read the `traceEvents` array of a (gzipped) Chrome trace in bounded memory.

The file is read in blocks; each block is cut after the last `}` `,` `{` boundary between two
events, and the events before the cut are decoded as one JSON array (the comma is overwritten
with `]` in place, so no copy is made). A wrong cut (inside a string or a nested list) cannot
decode, so every cut is validated by the decoder itself. What precedes the array (`{"schemaVersion":
..., "traceEvents": [`) and what follows it are decoded separately as the trace's metadata.
Memory stays at about two blocks plus the decoded events of one block.

Repairs that keep a trace readable (counted in `StreamResult.repairs`, first byte offset in
`StreamResult.repair_at`): a UTF-8 byte-order mark is skipped; bytes that are not UTF-8 (a
Latin-1 name) are replaced by U+FFFD as they are read (byte offsets in later messages then
count the replacement's 3 bytes); the non-JSON literals NaN, Infinity, -Infinity (Python's
json) and nan, inf, -inf (C printf) are rewritten in place, at the same length, as JSON strings
(`"N"`, `"Infini"`, ...), so a reader sees a string where a number was expected. A UTF-16 file
is refused with a one-line error.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import msgspec

from perfkit.core.errors import TraceError

T = TypeVar("T")

BLOCK_BYTES = 4 * 1024 * 1024  # measured: 2-4 MiB is fastest (cache) and smallest
MAX_HEADER_BYTES = 64 * 1024 * 1024
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BYTE_POS = re.compile(r"\(byte (\d+)\)")
_EVENT_POS = re.compile(r"`\$\[(\d+)\]([^`]*)`")
_WINDOW = 1 << 16
_MAX_RETRIES = 8
_BOM = b"\xef\xbb\xbf"
# the literal at an "invalid character" error; the ones with a minus sign are tried first
_LITERALS = (b"-Infinity", b"-inf", b"-nan", b"Infinity", b"NaN", b"inf", b"nan")
_LITERAL_VALUES = re.compile(rb"([:\[,]\s*)(-?Infinity|NaN|-?inf|-?nan)(?=\s*[,\]}])")
_MAX_PATCHES = 64  # decode attempts of one block that each fix a literal (the rest go in bulk)
UTF8_REPLACED = "invalid UTF-8 byte(s) replaced by U+FFFD"
LITERAL_QUOTED = "NaN / Infinity (not JSON) read as text"


@dataclass
class StreamResult(Generic[T]):
    """Decoded chunks are yielded; this collects what the trace says around its events."""

    header: dict[str, Any] = field(default_factory=dict)
    trailer: dict[str, Any] = field(default_factory=dict)
    events_read: int = 0
    in_object: bool = False  # the array is a key of a top-level object (not a bare array)
    repairs: dict[str, int] = field(default_factory=dict)  # what was repaired -> how often
    repair_at: dict[str, int] = field(default_factory=dict)  # what -> byte offset of the first

    def repaired(self, what: str, count: int, offset: int) -> None:
        self.repairs[what] = self.repairs.get(what, 0) + count
        self.repair_at.setdefault(what, offset)


@contextmanager
def open_trace(path: Path) -> Iterator[IO[bytes]]:
    """A binary reader, gunzipping when the file starts with the gzip magic bytes."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TraceError(f"{path}: cannot open ({exc.strerror}); check the path") from exc
    with fh:
        magic = fh.read(2)
        fh.seek(0)
        if magic == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                yield gz  # type: ignore[misc]  # a GzipFile reads bytes like IO[bytes]
        else:
            yield fh


class _Reader:
    """Blocks of the decompressed file, as UTF-8 (see the module docstring for the repairs)."""

    def __init__(self, path: Path, fh: IO[bytes], result: StreamResult[Any]) -> None:
        self.path = path
        self.fh = fh
        self.result = result
        self.offset = 0  # bytes of decompressed input consumed before the current buffer
        self.bom = 0  # length of a skipped byte-order mark
        self.raw_read = 0  # bytes read from the (decompressed) file
        self.pending = b""  # the start of a UTF-8 sequence cut by the block's end

    def read(self, n: int) -> bytes:
        try:
            block = self.fh.read(n)
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
            raise TraceError(
                f"{self.path}: compressed data is truncated or corrupt ({exc}); re-export the trace"
            ) from exc
        if self.raw_read == 0 and block:
            if block[:2] in (b"\xff\xfe", b"\xfe\xff"):
                raise TraceError(f"{self.path}: the file is UTF-16 (byte-order mark {block[:2].hex()}); save it as UTF-8")
            if block.startswith(_BOM):
                self.bom = len(_BOM)
                self.raw_read = self.bom
                block = block[self.bom :]
        self.raw_read += len(block)
        if self.pending or not block.isascii():
            block = self._utf8(block)
        return block

    def _utf8(self, block: bytes) -> bytes:
        data = self.pending + block
        start = self.raw_read - len(data)
        final = not block
        try:
            _, used = codecs.utf_8_decode(data, "strict", final)
            self.pending = data[used:]
            return data[:used]
        except UnicodeDecodeError as exc:
            text, used = codecs.utf_8_decode(data, "replace", final)
            self.pending = data[used:]
            bad = text.count("\ufffd") - data[:used].count("\ufffd".encode())
            self.result.repaired(UTF8_REPLACED, bad, start + exc.start)
            return text.encode("utf-8")


def _decode_meta(text: bytes, path: Path, where: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text)
    except RecursionError:  # nested thousands deep: no trace's header or footer is
        raise TraceError(f"{path}: the trace's {where} is nested too deeply to be a trace's; re-export the "
                         "trace") from None
    except msgspec.DecodeError as exc:
        try:  # the standard library reads NaN / Infinity (and numbers beyond float range)
            value = json.loads(text)
        except ValueError:
            raise TraceError(f"{path}: the trace's {where} is not valid JSON ({exc}); re-export the trace") from exc
    return value if isinstance(value, dict) else {}


def _patch_literal(reader: _Reader, buf: bytearray, exc: Exception) -> bool:
    """Rewrite a NaN / Infinity literal at an "invalid character" error as a same-length JSON
    string, and every later one in `buf` that stands where a value does; False if none is there."""
    msg = str(exc)
    pos = _BYTE_POS.search(msg)
    if "invalid character" not in msg or not pos:
        return False
    p = int(pos.group(1))
    for s in (p - 1, p, p - 4, p - 3, p - 2):
        lit = next((x for x in _LITERALS if s >= 0 and buf[s : s + len(x)] == x), None)
        if lit is None:
            continue
        buf[s : s + len(lit)] = b'"' + lit[:-2] + b'"'
        quoted = _LITERAL_VALUES.subn(lambda m: m.group(1) + b'"' + m.group(2)[:-2] + b'"', bytes(buf[s:]))
        buf[s:] = quoted[0]
        reader.result.repaired(LITERAL_QUOTED, 1 + quoted[1], reader.offset + s)
        return True
    return False


def _decode(reader: _Reader, decode: Callable[[memoryview], list[T]], buf: bytearray, end: int) -> list[T]:
    """decode(buf[:end]), after rewriting any NaN / Infinity literal it stops at."""
    for _ in range(_MAX_PATCHES):
        try:
            return decode(memoryview(buf)[:end])
        except msgspec.ValidationError:
            raise
        except RecursionError:  # an event nested thousands deep: damaged like any undecodable block
            raise msgspec.DecodeError("nested too deeply to decode") from None
        except msgspec.DecodeError as exc:
            if not _patch_literal(reader, buf, exc):
                raise
    return decode(memoryview(buf)[:end])


def iter_event_chunks(
    path: Path,
    decode: Callable[[memoryview], list[T]],
    result: StreamResult[T],
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[list[T]]:
    """Yield decoded lists of events, in file order; fills `result` as it goes."""
    with open_trace(path) as raw:
        reader = _Reader(path, raw, result)
        buf = _read_header(reader, result, block_bytes)
        yield from _read_events(reader, buf, decode, result, block_bytes)


def _read_header(reader: _Reader, result: StreamResult[Any], block_bytes: int) -> bytearray:
    """Consume up to the opening `[` of traceEvents; return a buffer starting with that `[`."""
    data = bytearray()
    while True:
        block = reader.read(block_bytes)
        data += block
        stripped = data.lstrip()
        if stripped[:1] == b"[":  # a bare event array (Chrome's JSON Array Format)
            start = len(data) - len(stripped)
            reader.offset = reader.bom + start
            return bytearray(data[start:])
        if stripped and stripped[:1] != b"{":
            pos = len(data) - len(stripped)
            raise TraceError(
                f"{reader.path}: not JSON (byte {pos} is {bytes(stripped[:1])!r}); "
                "expected a Chrome / Kineto trace (.json or .json.gz)"
            )
        match = _EVENTS_KEY.search(data)
        if match:
            head = bytes(data[: match.start()]).rstrip()
            head = head[:-1] if head.endswith(b",") else head
            result.header = _decode_meta(head + b"}", reader.path, "header")
            result.in_object = True
            reader.offset = reader.bom + match.end() - 1
            return bytearray(data[match.end() - 1 :])
        if not block or len(data) > MAX_HEADER_BYTES:
            what = "ends" if not block else f"has no traceEvents in its first {MAX_HEADER_BYTES >> 20} MiB"
            if not block and not data.strip():
                raise TraceError(f"{reader.path}: the file is empty; expected a Chrome / Kineto trace")
            raise TraceError(
                f"{reader.path}: no \"traceEvents\" array (file {what} at byte {len(data)}); "
                "not a Chrome / Kineto trace"
            )


def _last_boundaries(buf: bytearray) -> list[int]:
    """Positions of the comma of the last few `},{` boundaries, latest first."""
    start = max(0, len(buf) - _WINDOW)
    while True:
        commas = [m.start() + m.group().index(b",") for m in _BOUNDARY.finditer(buf, start)]
        if commas or start == 0:
            return commas[::-1][:_MAX_RETRIES]
        start = max(0, start - 16 * _WINDOW)


def _error(reader: _Reader, exc: Exception, first_event: int, what: str) -> TraceError:
    msg = str(exc)
    ev = _EVENT_POS.search(msg)
    if ev:
        index = first_event + int(ev.group(1))
        field_path = ev.group(2).lstrip(".") or "event"
        detail = msg.split(" - at ")[0]
        return TraceError(f"{reader.path}: traceEvents[{index}] {field_path}: {detail}; fix or re-export the trace")
    pos = _BYTE_POS.search(msg)
    byte = reader.offset + (int(pos.group(1)) if pos else 0)
    return TraceError(f"{reader.path}: {what} near byte {byte} (after event index {first_event}): {msg}; re-export the trace")


def _read_events(
    reader: _Reader,
    buf: bytearray,
    decode: Callable[[memoryview], list[T]],
    result: StreamResult[T],
    block_bytes: int,
) -> Iterator[list[T]]:
    eof = False
    while True:
        if not eof and len(buf) < block_bytes:
            block = reader.read(block_bytes)
            eof = not block
            buf += block
            if not eof:
                continue
        if eof:
            yield from _finish(reader, buf, decode, result)
            return
        first_error: Exception | None = None
        for comma in _last_boundaries(buf):
            buf[comma] = 0x5D  # ']'
            try:
                events = _decode(reader, decode, buf, comma + 1)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                buf[comma] = 0x2C  # ','
                trailing = _trailing_at(exc, buf)
                if trailing is not None:  # the array ended inside this block
                    yield from _finish(reader, buf, decode, result, known_end=trailing)
                    return
                if isinstance(exc, msgspec.ValidationError):
                    raise _error(reader, exc, result.events_read, "bad event") from exc
                # keep the error, not its traceback: the traceback holds a view of `buf`
                first_error = first_error or exc.with_traceback(None)
                continue
            result.events_read += len(events)
            yield events
            reader.offset += comma
            buf = bytearray(b"[") + buf[comma + 1 :]
            break
        else:
            if len(buf) > 4 * block_bytes:
                err = first_error or msgspec.DecodeError("no event boundary found")
                raise _error(reader, err, result.events_read, "malformed JSON")
            block = reader.read(block_bytes)  # grow the buffer and try again
            eof = not block
            buf += block


def _trailing_at(exc: Exception, buf: bytearray) -> int | None:
    """Where the array ends, from msgspec's "trailing characters (byte N)" (N is one past the
    first character after the array)."""
    msg = str(exc)
    if "trailing characters" not in msg:
        return None
    pos = _BYTE_POS.search(msg)
    if not pos:
        return None
    end = int(pos.group(1)) - 1
    while end > 0 and buf[end - 1] in b" \t\r\n":
        end -= 1
    return end


def _finish(
    reader: _Reader,
    buf: bytearray,
    decode: Callable[[memoryview], list[T]],
    result: StreamResult[T],
    known_end: int | None = None,
) -> Iterator[list[T]]:
    """The array closes in `buf`: decode its last events and the trailer after it."""
    end = known_end
    if end is None:
        try:
            events = _decode(reader, decode, buf, len(buf))
        except msgspec.ValidationError as exc:
            raise _error(reader, exc, result.events_read, "bad event") from exc
        except msgspec.DecodeError as exc:
            end = _trailing_at(exc, buf)
            if end is None:
                if "truncated" in str(exc):
                    raise TraceError(
                        f"{reader.path}: truncated at byte {reader.offset + len(buf)} "
                        f"(after event index {result.events_read}); the trace was cut off, re-export it"
                    ) from exc
                raise _error(reader, exc, result.events_read, "malformed JSON") from exc
        else:
            if result.in_object:
                raise TraceError(
                    f"{reader.path}: truncated at byte {reader.offset + len(buf)}: the file ends after the "
                    "event array without closing its object; re-export the trace"
                )
            result.events_read += len(events)  # a bare array with nothing after it
            yield events
            return
    try:
        events = _decode(reader, decode, buf, end)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _error(reader, exc, result.events_read, "malformed JSON") from exc
    result.events_read += len(events)
    yield events
    tail = bytes(buf[end:]) + _read_rest(reader)
    rest = tail.strip()
    if rest.startswith(b","):
        result.trailer = _decode_meta(b"{" + rest[1:], reader.path, "trailer")
    elif rest != b"}":
        if not rest:
            raise TraceError(
                f"{reader.path}: truncated at byte {reader.offset + len(buf)} after the event array "
                f"({result.events_read} events); re-export the trace"
            )
        _decode_meta(b"{" + rest, reader.path, "trailer")  # raises with the reason


def _read_rest(reader: _Reader) -> bytes:
    parts: list[bytes] = []
    while True:
        block = reader.read(BLOCK_BYTES)
        if not block:
            return b"".join(parts)
        parts.append(block)
        if sum(len(p) for p in parts) > MAX_HEADER_BYTES:
            raise TraceError(f"{reader.path}: more than {MAX_HEADER_BYTES >> 20} MiB after the event array; not a Kineto trace")
