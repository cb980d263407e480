"""JAX / XLA profiles (`*.xplane.pb`, an XSpace) -> `EventTable`.

    from perfkit.analyzers.loaders.xla.xplane import load_xplane
    table = load_xplane("host.xplane.pb")   # one rank per /device:GPU:N plane

What is read (planes as jax.profiler / the XLA GPU tracer write them, CUDA and ROCm alike):
- "/device:GPU:N" planes: every event of a "Stream #S..." line is GPU work on device N, stream
  S, rank N (+ `rank_offset`): a memcpy when its line is a Memcpy line or it has a
  `memcpy_details` stat (bytes from its `size:`), a memset when named so, else a kernel. Per
  kernel: `correlation_id`, and in `EventTable.extra` its launch configuration from
  `kernel_details` (grid_*, block_*, registers, static/dynamic shared bytes) and its HLO op and
  module (`hlo_op`, `hlo_module`, from the event's stats or its metadata's) as ids into
  `names` (`hlo_op_name_id`, `hlo_module_name_id`). Other lines of a device plane (derived
  "XLA Ops" / "XLA Modules" / "Steps" rows of post-processed files) repeat the stream events
  and are skipped, counted in `TraceMeta.dropped`.
- "/host:CPU": events with a `correlation_id` stat (cuLaunchKernel, hipModuleLaunchKernel,
  hipMemcpyDtoDAsync ...) are runtime calls on the rank of their `device_id`; an event with a
  `step_num` stat (jax.profiler.StepTraceAnnotation) is a step, named ProfilerStep#<step_num>
  (what the step analyses read) on every rank; Python tracer events ("$file:line fn") are left
  out like Kineto's python_function; the rest (XLA's TraceMe annotations: executions, thunks,
  allocations) are CPU ops. Host events with no device are put on the first rank.
- Not read: the "/host:metadata" plane (HLO protos), custom planes (Megascale), TPU planes;
  the allocator's memory-profile events are read by `analyzers.loaders.xla.allocator`.
Times are exact: a start is line.timestamp_ns * 1000 + offset_ps picoseconds, rounded half to
even to nanoseconds; a duration is duration_ps rounded the same way (CUPTI / roctracer give
whole nanoseconds, so nothing is rounded in practice).
Memory: the file is memory-mapped; events are read a line at a time into typed arrays
(~60 bytes per kept event), stats only for the keys below.
"""

from __future__ import annotations

from pathlib import Path

from perfkit.analyzers.event_table import EventTable
from perfkit.analyzers.loaders.xla.builder import (
    DEVICE_STATS,
    HOST_PLANE,
    HOST_STATS,
    STREAM_LINE,
    TableBuilder,
    device_number,
)
from perfkit.analyzers.loaders.xla.wire import WireError
from perfkit.analyzers.loaders.xla.xspace import XPlaneView, XSpaceView, open_xspace
from perfkit.core.errors import TraceError, shorten


def _read_device_plane(plane: XPlaneView, device: int, rank: int, out: TableBuilder) -> None:
    wanted = plane.stat_ids(DEVICE_STATS)
    meta = plane.event_metadata
    for line in plane.lines():
        out.read += len(line)
        if not STREAM_LINE.match(line.name):
            out.drop(f"device line '{shorten(line.name)}' (derived from the stream lines)", len(line))
            continue
        for ev in line.events(wanted):
            if ev is None:
                out.drop("aggregated event (no start time)")
                continue
            em = meta.get(ev.metadata_id)
            name = (em.display_name or em.name) if em is not None else str(ev.metadata_id)
            stats: dict[str, object] = {**ev.stats}
            if em is not None and em.stats:  # constant stats by their trace names: keep the wanted ones
                stats = {**{DEVICE_STATS.get(k, k): v for k, v in em.stats.items()}, **ev.stats}
            out.device_event(device, rank, line.name, name, ev.start_ps, ev.duration_ps, stats)


def _read_host_plane(plane: XPlaneView, ranks: dict[int, int], out: TableBuilder) -> None:
    wanted = plane.stat_ids(HOST_STATS)
    meta = plane.event_metadata
    for line in plane.lines():
        out.read += len(line)
        for ev in line.events(wanted):
            if ev is None:
                out.drop("aggregated event (no start time)")
                continue
            em = meta.get(ev.metadata_id)
            out.host_event(ranks, line.id, em.name if em is not None else str(ev.metadata_id), ev.start_ps,
                           ev.duration_ps, ev.stats)


def build_table(space: XSpaceView, rank_offset: int = 0) -> EventTable:
    """The EventTable of an XSpace (see the module doc); raises WireError on damaged bytes."""
    out = TableBuilder(space.path, "xla")
    devices, hosts = [], []
    for plane in space.planes():
        device = device_number(plane.name)
        if device is not None:
            devices.append((device, plane))
        elif plane.name == HOST_PLANE:
            hosts.append(plane)
    busy = sorted((d, p) for d, p in devices if any(len(line) for line in p.lines()))
    ranks = {d: rank_offset + d for d, _ in busy}
    for device, plane in busy:
        _read_device_plane(plane, device, ranks[device], out)
    for plane in hosts:
        _read_host_plane(plane, ranks or {0: rank_offset}, out)
    return out.table(rank=rank_offset)


def load_xplane(path: str | Path, rank_offset: int = 0) -> EventTable:
    """One .xplane.pb file (raises TraceError with one line for an unreadable or damaged file)."""
    try:
        if Path(path).stat().st_size == 0:
            raise TraceError(f"{path}: the file is empty; pass the .xplane.pb jax.profiler wrote (a copy that "
                             "was cut off holds nothing)")
        return build_table(open_xspace(path), rank_offset)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}; check the path") from None
    except (WireError, ValueError) as exc:
        raise TraceError(f"{path}: not a readable XSpace (.xplane.pb): {exc}; pass the file jax.profiler wrote "
                         "(a truncated copy cannot be read)") from None
