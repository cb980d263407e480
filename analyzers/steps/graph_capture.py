"""What a CUDA / HIP graph was captured from: the launches recorded while a stream was captured,
each with the op that issued it, read from a torch.profiler trace that covered the capture.

A graph replay (`cudaGraphLaunch` / `hipGraphLaunch`) runs its kernels with no launching op in
the trace: every kernel carries the graph launch's correlation id and nothing more. When the
profiler also ran while the graph was captured (vLLM's and SGLang's capture traces, or one trace
holding both), each captured kernel launch is there as a runtime call between
`*StreamBeginCapture` and `*StreamEndCapture` on the capturing thread, under the aten op /
record_function that issued it (its `External id`), with that op's `Input Dims`. ROCm traces
name the kernel on the launch call (`args.kernel`); CUDA traces do not. Kineto writes
`graph id` / `graph node id` on replayed kernels (CUDA 12+, Feb 2026) but nothing on a
capture-time launch, so node ids have nothing to be joined to: graph_replay.py matches replayed
kernels to captured launches by kernel name and order.

Read from the trace's JSON events (the launch's kernel name is not an `EventTable` column).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.analyzers.graph_coverage import GRAPH_LAUNCHES, load_events

BEGIN, END = "StreamBeginCapture", "StreamEndCapture"
_LAUNCH = re.compile(r"launch|memcpy|memset", re.I)
_RUNTIME = ("cuda_runtime", "cuda_driver")


@dataclass(frozen=True)
class CapturedLaunch:
    kernel: str  # the kernel's name where the trace gives it (ROCm: args.kernel), else ""
    api: str  # the runtime call (hipLaunchKernel, cudaLaunchKernel, cudaMemcpyAsync, ...)
    op: str  # the op that issued it (same External id), "" when not in the trace
    dims: str  # that op's Input Dims (JSON text), "" when not recorded


@dataclass(frozen=True)
class Capture:
    """One captured graph: its launches in the order the capturing thread issued them."""

    launches: tuple[CapturedLaunch, ...]
    source: str = ""  # the trace file it was read from

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(launch.kernel for launch in self.launches)


def _is_launch(name: str) -> bool:
    return bool(_LAUNCH.search(name)) and not name.startswith(GRAPH_LAUNCHES) and "GraphLaunch" not in name


def _kernel_name(api: str, args: dict[str, Any]) -> str:
    k = args.get("kernel")
    if isinstance(k, str):
        return k
    return "Memcpy" if "emcpy" in api else "Memset" if "emset" in api else ""


def captures_of(events: Iterable[dict[str, Any]], source: str = "") -> list[Capture]:
    """Every graph captured in `events` (Kineto trace events), in capture order."""
    events = list(events)
    ops: dict[tuple[Any, Any], tuple[str, str]] = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            args = e.get("args") or {}
            ext = args.get("External id")
            if ext is not None:
                dims = args.get("Input Dims")
                ops[(e.get("pid"), ext)] = (str(e.get("name", "")), "" if dims is None else _dims_text(dims))
    calls = sorted((e for e in events if e.get("cat") in _RUNTIME and e.get("ph", "X") == "X"),
                   key=lambda e: float(e.get("ts", 0)))
    open_: dict[tuple[Any, Any], list[CapturedLaunch]] = {}
    out: list[Capture] = []
    for e in calls:
        name, thread = str(e.get("name", "")), (e.get("pid"), e.get("tid"))
        if BEGIN in name:
            open_[thread] = []
        elif END in name:
            if thread in open_:
                out.append(Capture(tuple(open_.pop(thread)), source))
        elif thread in open_ and _is_launch(name):
            args = e.get("args") or {}
            op, dims = ops.get((e.get("pid"), args.get("External id")), ("", ""))
            open_[thread].append(CapturedLaunch(_kernel_name(name, args), name, op, dims))
    return [c for c in out if c.launches]


def _dims_text(dims: Any) -> str:
    return json.dumps(dims, separators=(",", ":"))


def scan(path: str | Path) -> tuple[bool, bool]:
    """(records a stream capture, records a graph launch) of a Kineto trace file: a byte scan,
    no JSON parse; (False, False) for a file that cannot be read (its loader says why)."""
    p = Path(path)
    opener = gzip.open if p.name.endswith(".gz") else open
    words = [BEGIN.encode(), b"GraphLaunch"]
    found = [False, False]
    tail = b""
    try:
        with opener(p, "rb") as f:
            while not all(found) and (chunk := f.read(1 << 22)):
                window = tail + chunk
                found = [h or w in window for h, w in zip(found, words, strict=True)]
                tail = chunk[-len(BEGIN):]
    except (OSError, EOFError):
        return False, False
    return found[0], found[1]


def split_captures(paths: Sequence[str | Path]) -> tuple[list[str | Path], list[Capture]]:
    """(the traces that hold steps, the graphs captured in any of `paths`). A trace of graph
    capture alone (a capture, no graph launch: vLLM's and SGLang's capture traces) holds no
    steps; one with both is read for both. Kineto JSON files only are scanned."""
    replays: list[str | Path] = []
    captures: list[Capture] = []
    for p in paths:
        captured, launched = scan(p) if str(p).endswith((".json", ".json.gz")) else (False, True)
        if captured:
            captures.extend(captures_of(load_events(p), str(p)))
        if launched or not captured:
            replays.append(p)
    return replays or list(paths), captures
