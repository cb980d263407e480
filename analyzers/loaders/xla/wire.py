"""Protocol Buffers wire format, read in place: the few primitives the XSpace reader needs.

A message is a run of fields: a varint key (field number << 3 | wire type) and a value. Wire
types: 0 varint, 1 fixed 64 bits, 2 length-delimited (strings, bytes, sub-messages, packed
repeated), 5 fixed 32 bits (3 / 4, groups, are long deprecated and refused). Nothing is copied:
a length-delimited value is given as its (start, end) offsets into the buffer, so a reader
decodes only the sub-messages it wants (bounded memory on a large file: `mmap` it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_U64 = 1 << 64


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (offset in the message)."""



def varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos` (an unsigned 64-bit value)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError(f"a varint runs past its message at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & (_U64 - 1), pos
        shift += 7
        if shift >= 70:
            raise WireError(f"a varint longer than 10 bytes at byte {pos}")


def signed(value: int) -> int:
    """An int64 field's varint (two's complement in 64 bits) as a Python int."""
    return value - _U64 if value >= 1 << 63 else value


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, a, b) for each field in buf[start:end]: for a varint a is the
    value (b unused), for a length-delimited value [a, b) is its span, for fixed values [a, b)
    is the span of its 8 or 4 bytes."""
    pos = start
    while pos < end:
        key, pos = varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:  # field numbers start at 1: zeros or foreign bytes, not a message
            raise WireError(f"field number 0 at byte {pos - 1} (not a protobuf message)")
        if wire == VARINT:
            value, pos = varint(buf, pos, end)
            yield number, wire, value, pos
        elif wire == LENGTH:
            n, pos = varint(buf, pos, end)
            if pos + n > end:
                raise WireError(f"field {number} ({n} bytes) runs past its message at byte {pos}")
            yield number, wire, pos, pos + n
            pos += n
        elif wire in (FIXED64, FIXED32):
            n = 8 if wire == FIXED64 else 4
            if pos + n > end:
                raise WireError(f"field {number} runs past its message at byte {pos}")
            yield number, wire, pos, pos + n
            pos += n
        else:
            raise WireError(f"field {number} has wire type {wire} (not one of 0, 1, 2, 5) at byte {pos}")


def text(buf: bytes, start: int, end: int) -> str:
    """A string field's UTF-8 (invalid bytes replaced: a name never loses the file)."""
    return bytes(buf[start:end]).decode("utf-8", "replace")


def double(buf: bytes, start: int) -> float:
    return float(struct.unpack_from("<d", buf, start)[0])
