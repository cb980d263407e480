"""Server-Sent Events, incrementally: bytes as they arrive -> the `data:` payload of each event.

Only what OpenAI-compatible servers send is kept: `data:` fields (several in one event are joined
by newlines, as the SSE standard says); comments (`:`), `event:`, `id:` and `retry:` lines are
skipped. Lines end in LF, CRLF or CR. An event larger than `max_event_bytes` raises SseError
instead of growing the buffer without bound (a server that sends a 10 MB line).
"""

from __future__ import annotations

MAX_EVENT_BYTES = 4 * 1024 * 1024


class SseError(Exception):
    """A stream that is not usable SSE (an event over the size limit)."""


class SseParser:
    """Feed bytes with `feed`; it returns the data payloads of the events those bytes completed."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._max = max_event_bytes
        self._buf = bytearray()
        self._data: list[bytes] = []
        self._size = 0
        self._cr = False  # the last byte fed was CR (its LF may come in the next piece)

    def feed(self, piece: bytes) -> list[str]:
        out: list[str] = []
        start = 0
        if self._cr and piece.startswith(b"\n"):
            start = 1
        self._cr = False
        i = start
        n = len(piece)
        while i < n:
            b = piece[i]
            if b == 0x0A or b == 0x0D:
                self._buf += piece[start:i]
                self._line(bytes(self._buf), out)
                self._buf.clear()
                if b == 0x0D:
                    if i + 1 < n and piece[i + 1] == 0x0A:
                        i += 1
                    elif i + 1 == n:
                        self._cr = True
                start = i + 1
            i += 1
        self._buf += piece[start:]
        if len(self._buf) + self._size > self._max:
            raise SseError(f"an event over {self._max // (1024 * 1024)} MiB")
        return out

    def close(self) -> list[str]:
        """The event left unterminated when the stream ended (servers that omit the last blank line)."""
        out: list[str] = []
        if self._buf:
            self._line(bytes(self._buf), out)
            self._buf.clear()
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[str]) -> None:
        if not line:  # blank line: the event ends
            if self._data:
                out.append(b"\n".join(self._data).decode("utf-8", errors="replace"))
            self._data, self._size = [], 0
            return
        if line.startswith(b":"):
            return
        name, _, value = line.partition(b":")
        if name != b"data":
            return
        if value.startswith(b" "):
            value = value[1:]
        self._size += len(value)
        if self._size > self._max:
            raise SseError(f"an event over {self._max // (1024 * 1024)} MiB")
        self._data.append(value)
