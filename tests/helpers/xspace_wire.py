"""A tiny XSpace (xplane.proto) writer for tests: protobuf wire bytes built by hand, so a test can
write any field with any wire type, length or value (damaged ones included).

    data = xspace(name="ampere_gemm", hlo="fusion.1")   # one GPU kernel, one host event
    path.write_bytes(data)
"""

from __future__ import annotations

VARINT, LENGTH = 0, 2


def varint(n: int) -> bytes:
    """`n` as a protobuf varint (negative numbers as their 64-bit two's complement: 10 bytes)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def int_field(number: int, value: int) -> bytes:
    return key(number, VARINT) + varint(value)


def bytes_field(number: int, data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    return key(number, LENGTH) + varint(len(raw)) + raw


STATS = {1: "hlo_op", 2: "correlation_id", 3: "kernel_details"}


def xspace(name: str | bytes = "ampere_gemm", hlo: str | bytes = "fusion.1", ts_ns: int = 1000, offset_ps: int = 5000,
           duration_ps: int = 2000, plane: str = "/device:GPU:0", line: str = "Stream #7(Kernel)",
           extra_stats: bytes = b"") -> bytes:
    """An XSpace with one kernel on `plane`'s `line` (HLO op `hlo`) and one host event."""
    stat_meta = b"".join(bytes_field(5, int_field(1, i) + bytes_field(2, int_field(1, i) + bytes_field(2, n)))
                         for i, n in STATS.items())
    event_meta = bytes_field(4, int_field(1, 1) + bytes_field(2, int_field(1, 1) + bytes_field(2, name)))
    event = (int_field(1, 1) + int_field(2, offset_ps) + int_field(3, duration_ps)
             + bytes_field(4, int_field(1, 1) + bytes_field(5, hlo)) + extra_stats)
    device = int_field(1, 1) + bytes_field(2, plane) + bytes_field(
        3, int_field(1, 7) + bytes_field(2, line) + int_field(3, ts_ns) + bytes_field(4, event)) + event_meta + stat_meta
    host_event = int_field(1, 1) + int_field(2, offset_ps) + int_field(3, 10)
    host = (int_field(1, 2) + bytes_field(2, "/host:CPU")
            + bytes_field(3, int_field(1, 3) + bytes_field(2, "main") + int_field(3, ts_ns) + bytes_field(4, host_event))
            + bytes_field(4, int_field(1, 1) + bytes_field(2, int_field(1, 1) + bytes_field(2, "ExecuteOnDevice"))))
    return bytes_field(1, device) + bytes_field(1, host)
