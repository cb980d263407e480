"""Injected faults, for testing clients against hostile servers (`--fault NAME --fault-every N`).

The Nth, 2Nth, ... generation request (counted from 1, over both endpoints) gets the fault:
- close-mid-stream: after half the output tokens (at least one content chunk), the connection
  is closed with no end of the chunked body and no [DONE];
- malformed-sse:    after the first content chunk, a `data: {not json` event; then the stream goes on;
- huge-chunk:       after the first content chunk, one valid JSON data line of 10 MiB (empty
  choices, a "padding" string under "perfkit"); then the stream goes on;
- never-end:        after the last token (and usage chunk), no [DONE]: the stream stays open
  until the client goes away or the server stops;
- http-500:         an HTTP 500 with an OpenAI-style error body instead of any output.
Without streaming: close-mid-stream closes the connection before the response, malformed-sse
answers `{not json`, huge-chunk pads the body to 10 MiB, never-end never answers.
"""

from __future__ import annotations

CLOSE_MID_STREAM = "close-mid-stream"
MALFORMED_SSE = "malformed-sse"
HUGE_CHUNK = "huge-chunk"
NEVER_END = "never-end"
HTTP_500 = "http-500"
FAULTS = (CLOSE_MID_STREAM, MALFORMED_SSE, HUGE_CHUNK, NEVER_END, HTTP_500)

HUGE_BYTES = 10 * 2**20
MALFORMED_EVENT = b"data: {not json\n\n"


class FaultPicker:
    def __init__(self, name: str | None, every: int) -> None:
        if name is not None and name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}; use one of {', '.join(FAULTS)}")
        self.name, self.every, self.requests = name, every, 0

    def next(self) -> str | None:
        """The fault of the next generation request, or None."""
        self.requests += 1
        if self.name is None or self.requests % self.every:
            return None
        return self.name
