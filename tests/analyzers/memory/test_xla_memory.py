"""`perfkit memory X.xplane.pb`: XLA's allocator timeline (TraceLens's GPU xplanes), and a real
jax[cpu] trace recorded here, which has no allocator events (exit 2, one line saying how to record)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.memory.load import detect, load_memory_input
from perfkit.analyzers.loaders.memory.xla import device_of
from perfkit.analyzers.loaders.xla.allocator import allocator_events
from perfkit.analyzers.loaders.xla.xspace import open_xspace
from perfkit.analyzers.memory.analysis import analyze_memory
from perfkit.cli import main

DATA = Path(__file__).parents[1] / "data" / "xla"
TE = DATA / "te_fused_attn.xplane.pb"
LEGACY = DATA / "conv_legacy_jax06.xplane.pb"


def test_device_names_from_allocators() -> None:
    assert device_of("GPU_1_bfc") == "gpu:1" and device_of("TPU_12_x") == "tpu:12"
    assert device_of("host_pinned") == "host_pinned" and device_of("") == "xla"


def test_replay_reproduces_xlas_own_bytes_in_use() -> None:
    raw = allocator_events(open_xspace(TE))
    source = load_memory_input(TE)
    assert detect(TE) == "xla-allocator" and source.kind == "xla-allocator"
    assert len(source.events) == len(raw) == 59 and source.segments is None
    result = analyze_memory(source)
    t = result.timeline
    assert t.reported_checked == 59 and t.reported_mismatches == 0  # every event matches XLA's total
    assert t.allocated_bytes == [e.bytes_in_use for e in raw]
    assert t.peak.allocated_bytes == max(e.bytes_in_use for e in raw) == 663_228_416
    seen: set[int] = set()
    older_freed = 0  # bytes of blocks from before the input freed before the peak
    for e in raw[:t.peak.event_index + 1]:
        if e.kind == "alloc":
            seen.add(e.addr)
        elif e.addr not in seen:
            older_freed += e.allocation_bytes
    alive = sum(a.size_bytes for a in t.peak.alive)
    assert alive + t.peak.baseline_bytes - older_freed == t.peak.allocated_bytes
    assert result.notes and "bytes_reserved" in result.notes[0]  # reserved: said to be unmeasured


def test_each_gpu_of_an_eight_gpu_xplane(capsys: pytest.CaptureFixture[str]) -> None:
    raw = allocator_events(open_xspace(LEGACY))
    assert main(["memory", str(LEGACY), "--device", "gpu:3", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    mine = [e for e in raw if e.allocator == "GPU_3_bfc"]
    assert data["device"] == "gpu:3" and len(data["devices"]) == 8 and data["events"] == len(mine) == 60
    assert data["peak"]["allocated_bytes"] == max(e.bytes_in_use for e in mine)
    assert main(["memory", str(LEGACY), "--top", "3", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "xla-allocator" in out and "60 of 60 events match" in out and "not measured: reserved" in out


def test_damaged_xplane_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(TE.read_bytes()[:5000])
    assert main(["memory", str(cut)]) == 2
    err = capsys.readouterr().err
    assert str(cut) in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_jax_cpu_trace_has_no_allocator_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    f = jax.jit(lambda a: (a @ a).sum())
    a = jnp.ones((64, 64))
    f(a).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(2):
            f(jnp.ones((128, 128)) * 2).block_until_ready()
    xplane = next(p for p in tmp_path.rglob("*.xplane.pb"))
    assert allocator_events(open_xspace(xplane)) == []
    assert main(["memory", str(xplane)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "no allocator events" in lines[0] and "jax.profiler.trace" in lines[0]


@pytest.mark.parametrize("path", [TE, LEGACY])
def test_frames_and_op_calls_are_the_host_events_around_each_allocation(path: Path) -> None:
    """Checked against a brute-force search of the same file: every host event on the thread
    whose span holds the allocator event's time."""
    space = open_xspace(path)
    (plane,) = [p for p in space.planes() if p.name == "/host:CPU"]
    meta = plane.event_metadata
    spans: dict[int, list[tuple[int, int, str]]] = {}
    for line in plane.lines():
        spans[line.id] = [(ev.start_ps, ev.start_ps + ev.duration_ps, meta[ev.metadata_id].name)
                          for ev in line.events({}) if ev is not None]
    raw = allocator_events(space)
    events = load_memory_input(path).events
    assert len(events) == len(raw)
    for r, e in zip(raw, events, strict=True):
        t_ps = next(s for s, _, n in spans[r.thread_id] if n.startswith("Memory") and abs(s // 1000 - r.ts_ns) <= 1)
        held = sorted((s, -end, n) for s, end, n in spans[r.thread_id]
                      if s <= t_ps <= end and n not in ("MemoryAllocation", "MemoryDeallocation"))
        assert [f.name for f in e.frames] == [n for _, _, n in reversed(held)]
        assert e.op == (held[0][2] if held else "") and (e.op_id >= 0) == bool(held)
    result = analyze_memory(load_memory_input(path))
    if path == TE:  # five calls of the jitted loss; what one call allocates and frees is temporary
        (op,) = result.ops
        assert op.op == "PjitFunction(loss_fn)" and op.calls == 5
        assert {c.category for c in result.categories} == {"temporary", "unknown"}
