"""JAX's JSON traces -> `EventTable`: the Chrome trace format jax.profiler / TensorBoard /
xprof write (`HOST.trace.json.gz`, `perfetto_trace.json.gz`, xprof's trace-viewer JSON).

Processes are planes, named by "process_name" metadata events ("/device:GPU:0", "/host:CPU"),
threads are lines ("Stream #13(Kernel)", "Host Threads/583", "python"); complete events (ph X)
carry the stats in `args` (correlation_id, hlo_op, hlo_module, kernel_details,
memcpy_details, device_id, step_num). The same rules as the xplane loader apply
(analyzers.loaders.xla.builder); ts / dur are microseconds, read exactly from their decimal
text. The trailing `{}` event of TF / XLA traces is skipped. The JSON carries less than the
xplane (no event metadata stats, no allocator details, rounded times in some writers): a
note in `TraceMeta.warnings` says so when the xplane is not beside it.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import msgspec

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.loaders.kineto.json_stream import (
    BLOCK_BYTES,
    StreamResult,
    iter_event_chunks,
)
from perfkit.analyzers.loaders.xla.builder import (
    DEVICE_STATS,
    HOST_PLANE,
    HOST_STATS,
    STREAM_LINE,
    TableBuilder,
    device_number,
    int_stat,
)
from perfkit.core.errors import TraceError, shorten

_DECODER = msgspec.json.Decoder(list[Any], float_hook=Decimal)
_THOUSAND = Decimal(1000000)  # microseconds -> picoseconds


def _decode(buf: memoryview) -> list[Any]:
    return _DECODER.decode(buf)


def _ps(value: Any) -> int | None:
    """Microseconds (int, decimal, or numeric text) as integer picoseconds; None if not a number."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        d = value if isinstance(value, Decimal) else Decimal(str(value))
        return int((d * _THOUSAND).to_integral_value(ROUND_HALF_EVEN))
    except (InvalidOperation, ValueError, OverflowError):
        return None


def _id(value: Any) -> Any:
    """A pid / tid as a key: a number or text as it is, anything else (a list, an object) None."""
    return value if isinstance(value, int | float | str) else None


class _State:
    def __init__(self, out: TableBuilder, rank_offset: int) -> None:
        self.rank_offset = rank_offset
        self.out = out
        self.process: dict[Any, str] = {}
        self.thread: dict[tuple[Any, Any], str] = {}
        self.pending: list[dict[str, Any]] = []
        self.ranks: dict[int, int] = {}

    def meta(self, ev: dict[str, Any]) -> None:
        args = ev.get("args")
        name = args.get("name") if isinstance(args, dict) else None
        if not isinstance(name, str):
            return
        if ev.get("name") == "process_name":
            self.process[_id(ev.get("pid"))] = name
            n = device_number(name)
            if n is not None:
                self.ranks.setdefault(n, self.rank_offset + n)
        elif ev.get("name") == "thread_name":
            self.thread[(_id(ev.get("pid")), _id(ev.get("tid")))] = name

    def complete(self, ev: dict[str, Any], final: bool = False) -> None:
        out = self.out
        pid, tid = _id(ev.get("pid")), _id(ev.get("tid"))
        plane = self.process.get(pid) if pid is not None else None
        if plane is None:
            if final:
                out.drop("event of an unnamed process")
            else:
                self.pending.append(ev)
            return
        start, dur = _ps(ev.get("ts")), _ps(ev.get("dur", 0))
        if start is None or dur is None or dur < 0:
            out.drop("no readable ts / dur")
            return
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        name = ev.get("name")
        name = name if isinstance(name, str) else str(name)
        device = device_number(plane)
        if device is not None:
            line = self.thread.get((pid, tid), "")
            if not STREAM_LINE.match(line):
                out.drop(f"device line '{shorten(line)}' (derived from the stream lines)")
                return
            stats = {DEVICE_STATS[k]: v for k, v in args.items() if k in DEVICE_STATS}
            out.device_event(device, self.ranks[device], line, name, start, dur, stats)
        elif plane == HOST_PLANE:
            stats = {HOST_STATS[k]: v for k, v in args.items() if k in HOST_STATS}
            out.host_event(self.ranks or {0: self.rank_offset}, int_stat(tid) if isinstance(tid, int) else -1, name, start,
                           dur, stats)
        else:
            out.drop(f"process '{shorten(plane)}'")


def _read_chunk(state: _State, chunk: list[Any]) -> None:
    for ev in chunk:
        state.out.read += 1
        if not isinstance(ev, dict) or not ev:
            continue  # the trailing {} of TF / XLA traces
        ph = ev.get("ph")
        if ph == "M":
            state.meta(ev)
        elif ph == "X":
            state.complete(ev)


def load_jax_json(path: str | Path, rank_offset: int = 0, block_bytes: int = BLOCK_BYTES) -> EventTable:
    """One JAX JSON trace (.json / .json.gz); raises TraceError on a file that is not JSON."""
    path = Path(path)
    out = TableBuilder(str(path), "xla-json")
    state = _State(out, rank_offset)
    result: StreamResult[Any] = StreamResult()
    try:
        for chunk in iter_event_chunks(path, _decode, result, block_bytes):
            _read_chunk(state, chunk)
    except RecursionError:  # msgspec stops at its own depth limit; Python objects that deep are refused
        raise TraceError(f"{path}: an event nested too deeply to decode (after event index {out.read}); "
                         "pass the trace jax.profiler wrote") from None
    for ev in state.pending:
        state.complete(ev, final=True)
    beside = sorted(path.parent.glob("*.xplane.pb"))
    note = (f"{path}: a JAX JSON trace; {beside[0].name} beside it carries more (event metadata stats, "
            "allocator events): pass it instead" if beside else
            f"{path}: a JAX JSON trace; the .xplane.pb jax.profiler writes beside it carries more "
            "(event metadata stats, allocator events)")
    return out.table((note,), rank_offset)
