"""A serving stage's profiling window: what the server traced, when, and what it cost the stage.

`PointArtifacts` is what one point (a serving stage) produced beside its metrics: the server's
trace files copied into the run (paths relative to the run directory, under
`server_traces/<point key slug>/`) and the `ProfileWindow` they were captured in. Both are left
out of run.json when empty, so older records load unchanged.

Times are seconds on the load client's clock relative to the stage start (the `t0` of the
per-request records). The overhead compares the stage's requests that overlapped the window with
those that did not (TPOT p50 each), and the token gaps inside the window with those outside it
(ITL p50 each); a number that could not be formed (no request on one side) is None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

ServerKind = Literal["perfkit", "vllm", "sglang"]
SERVER_KINDS: tuple[str, ...] = ("perfkit", "vllm", "sglang")


@dataclass(frozen=True)
class WindowOverhead:
    """The window's cost on the stage: the same numbers with and without the profiler on."""

    tpot_p50_inside_s: float | None = None  # requests that overlapped the window
    tpot_p50_outside_s: float | None = None  # requests that did not
    itl_p50_inside_s: float | None = None  # token gaps whose both tokens arrived inside the window
    itl_p50_outside_s: float | None = None  # token gaps wholly outside it
    requests_inside: int = 0
    requests_outside: int = 0

    @property
    def tpot_ratio(self) -> float | None:
        """TPOT p50 inside / outside (1.05: the window made overlapping requests 5% slower)."""
        a, b = self.tpot_p50_inside_s, self.tpot_p50_outside_s
        return a / b if a is not None and b else None

    @property
    def itl_ratio(self) -> float | None:
        a, b = self.itl_p50_inside_s, self.itl_p50_outside_s
        return a / b if a is not None and b else None


@dataclass(frozen=True)
class ProfileWindow:
    """One window of a server's profiler inside a stage."""

    server: str  # perfkit | vllm | sglang (SERVER_KINDS)
    start_s: float  # /start_profile answered (stage clock)
    end_s: float  # the trace was complete: /stop_profile answered, or the trace file appeared
    steps: int | None = None  # engine steps asked for (perfkit, SGLang: num_steps)
    seconds: float | None = None  # or: seconds asked for (the client called /stop_profile)
    trace_dir: str | None = None  # where the server wrote the trace (as the client saw it)
    request_ids: list[int] = field(default_factory=list)  # RequestRecord.index of requests inside
    overhead: WindowOverhead = field(default_factory=WindowOverhead)
    note: str | None = None  # why traces are missing or the window left the steady window
    in_steady_window: bool | None = None  # inside the stage's steady window (None: no such window)

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "server", "start_s", "end_s", "steps", "seconds", "trace_dir", "request_ids", "overhead",
        "note", "in_steady_window")
    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset({"note", "trace_dir"})

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class PointArtifacts:
    """Files a point produced beside its metrics (paths relative to the run directory)."""

    server_traces: list[str] = field(default_factory=list)
    profile_window: ProfileWindow | None = None

    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset({"server_traces", "profile_window"})

    def __bool__(self) -> bool:
        return bool(self.server_traces) or self.profile_window is not None
