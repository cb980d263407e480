"""XSpace loader against TraceLens's real MI300X xplanes and TraceLens's own report CSVs."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import numpy as np

from perfkit.analyzers.event_table import EventTable, Kind
from perfkit.analyzers.hlo_ops import hlo_op_summary
from perfkit.analyzers.launch import launch_summary
from perfkit.analyzers.loaders.trace_files import load_trace_file, trace_format
from perfkit.analyzers.loaders.xla.allocator import allocator_events
from perfkit.analyzers.loaders.xla.builder import hlo_names
from perfkit.analyzers.loaders.xla.xspace import open_xspace

DATA = Path(__file__).parent / "data" / "xla"
LEGACY = DATA / "conv_legacy_jax06.xplane.pb"
EIGHT = DATA / "conv_8gpu_jax08.xplane.pb"
TE = DATA / "te_fused_attn.xplane.pb"
CSVS = DATA / "tracelens_csvs"


def _csv(name: str) -> list[dict[str, str]]:
    with open(CSVS / f"{name}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _per_device(table: EventTable, kind: Kind) -> dict[int, tuple[int, int]]:
    """{device: (count, total ns)} of the rows of `kind`."""
    mask = table.mask_kind(kind)
    out = {}
    for d in np.unique(table["device"][mask]).tolist():
        sel = mask & (table["device"] == d)
        out[int(d)] = (int(sel.sum()), int(table["dur_ns"][sel].astype(np.int64).sum()))
    return out


def _ms_to_ns(text: str) -> int:
    return int((Decimal(text) * 1_000_000).to_integral_value())


def test_legacy_matches_tracelens_per_device_to_the_nanosecond() -> None:
    table = load_trace_file(LEGACY)
    timeline = {(r["gpu_pid"], r["type"]): r["time ms"] for r in _csv("gpu_timeline")}
    kernels, copies = _per_device(table, Kind.KERNEL), _per_device(table, Kind.MEMCPY)
    # TraceLens's gpu pid is device + 1; computation_time is the kernels' time on that GPU
    assert set(kernels) == {7} and set(copies) == {0}
    assert kernels[7][1] == _ms_to_ns(timeline[("8", "computation_time")]) == 3_586_493
    assert copies[0][1] == _ms_to_ns(timeline[("1", "total_memcpy_time")]) == 889_028
    summary = _csv("kernel_launchers_summary")
    assert kernels[7][0] == sum(int(r["Count"]) for r in summary) == 25
    assert copies[0][0] == 53  # TraceLens's test_tree_event_cats: memcpy 53


def test_legacy_per_kernel_matches_tracelens() -> None:
    table = load_trace_file(LEGACY)
    mask = table.mask_kind(Kind.KERNEL)
    names = table.name_of(table["name_id"][mask])
    dur = table["dur_ns"][mask].astype(np.int64)
    ours = {n: (int((names == n).sum()), int(dur[names == n].sum())) for n in set(names.tolist())}
    theirs = {r["name"]: (int(r["Count"]), int(Decimal(r["total_direct_kernel_time_sum"]) * 1000))
              for r in _csv("kernel_launchers_summary")}
    assert ours == theirs


def test_eight_gpus_one_rank_per_device_every_kernel_linked() -> None:
    table = load_trace_file(EIGHT)
    assert trace_format(EIGHT) == "xplane"
    assert table.meta[0].source == "xla" and table.meta[0].world_size == 8
    kernels = _per_device(table, Kind.KERNEL)
    assert sum(c for c, _ in kernels.values()) == 235
    assert {d: c for d, (c, _) in kernels.items()} == {0: 60, **{d: 25 for d in range(1, 8)}}
    gpu = table.gpu_mask()
    assert np.array_equal(table["rank"][gpu], table["device"][gpu])
    launch = launch_summary(table).set_index("rank")
    assert list(launch.index) == list(range(8))
    assert (launch["linked_ops"] == launch["gpu_ops"]).all()  # ROCm device_id is no ordinal: linked by correlation
    rows = np.flatnonzero(gpu & (table["device"] == 1))
    op, module = hlo_names(table, rows)
    assert set(module.tolist()) == {"jit_forward_3d_conv"} and "cudnn-conv.1" in set(op.tolist())
    grid = table.extras_at(("grid_x", "grid_y", "block_x"), rows)
    assert (69840, 1, 256) in set(zip(grid["grid_x"].tolist(), grid["grid_y"].tolist(), grid["block_x"].tolist(), strict=True))


def test_te_fused_attention_fill_buffers_inside_te_ops() -> None:
    """TraceLens issue #422's fixture: fillBufferAligned kernels carry a te_fused_attn HLO op."""
    table = load_trace_file(TE)
    gpu = np.flatnonzero(table.gpu_mask())
    assert len(gpu) == 150
    names = table.name_of(table["name_id"][gpu])
    fills = gpu[names == "__amd_rocclr_fillBufferAligned.kd"]
    assert len(fills) >= 10
    op, module = hlo_names(table, fills)
    assert all("te_fused_attn" in o for o in op.tolist()) and set(module.tolist()) == {"jit_loss_fn"}


def test_hlo_ops_table_groups_kernels_of_one_op() -> None:
    df = hlo_op_summary(load_trace_file(LEGACY)).set_index("hlo_op")
    conv = df.loc["cudnn-conv.1.0"]  # im2col + GEMM of one cuDNN-style convolution
    assert conv["count"] == 10 and conv["distinct_kernels"] == 2
    assert conv["total_ns"] == 1_458_753 + 81_079
    assert df["total_ns"].sum() == 3_586_493  # every kernel of the trace names its HLO op
    assert list(df["total_ns"]) == sorted(df["total_ns"], reverse=True)


def test_allocator_events_typed() -> None:
    events = allocator_events(open_xspace(LEGACY))
    assert len(events) == 460
    assert {e.kind for e in events} == {"alloc", "free"}
    assert {e.allocator for e in events} == {f"GPU_{i}_bfc" for i in range(8)}
    assert [e.ts_ns for e in events] == sorted(e.ts_ns for e in events)
    assert max(e.peak_bytes_in_use for e in events) == 1_739_215_104
    assert all(e.bytes_in_use >= 0 and 0 <= e.fragmentation <= 1 for e in events)


def test_python_tracer_events_left_out_and_counted() -> None:
    table = load_trace_file(LEGACY)
    assert dict(table.meta[0].dropped) == {"python function": 2648}
    assert not any(n.startswith("$") for n in table.names)
