"""Narrow integer columns: every table is the same as with full-width columns, sums stay exact.

The loaders store durations and id columns in the smallest dtype that holds them
(`event_table.narrow_columns`). Each analysis is run on the real shared traces twice, once on
the table as loaded and once with every column widened back to COLUMNS' dtype, and the
frames must be equal value for value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfkit.analyzers.ranges as ranges_mod
from perfkit.analyzers.event_table import (
    COLUMNS,
    EventTable,
    Kind,
    empty_columns,
    int_dtype_for,
    member,
    narrow_columns,
    narrowest,
)
from perfkit.analyzers.kernel_summary import category_summary, kernel_summary
from perfkit.analyzers.launch import launch_latency
from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.analyzers.ranges import range_instances, range_projection
from perfkit.analyzers.suite import run_analyses

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO.parent / "shared" / "bench"
TRACES = [
    BENCH / "traces" / "hta_nccl_data_a100.json.gz",
    BENCH / "traces" / "hta_ns_resolution_v100.json.gz",
    BENCH / "nsys" / "mfu_2gpu_before.sqlite",
    BENCH / "nsys" / "h100_2gpu_1s.sqlite",
    REPO / "examples" / "traces" / "alexnet-a100.json.gz",
]


def _load(path: Path) -> EventTable:
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return load_trace_files([path])


def _widened(table: EventTable) -> EventTable:
    cols = {k: np.array(v, dtype=COLUMNS[k]) for k, v in table.columns.items()}
    cols["dur_ns"] = cols["dur_ns"].astype(np.int64)
    return EventTable(cols, table.names, table.args_text, table.meta, table.extra, table.extra_rows, table.extra_code)


def _frames(table: EventTable) -> dict[str, pd.DataFrame]:
    out = run_analyses(table)
    out["kernels_by_rank"] = kernel_summary(table, by_rank=True)
    out["ranges_by_rank"] = range_projection(table, by_rank=True)
    out["range_instances"] = range_instances(table)
    out["launch_latency"] = launch_latency(table)
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_table_is_the_same_on_narrow_and_wide_columns(path: Path) -> None:
    table = _load(path)
    narrow = [k for k, v in table.columns.items() if v.dtype.itemsize < np.dtype(COLUMNS[k]).itemsize]
    assert "rank" in narrow and len(narrow) >= 4  # the loader did narrow: the comparison means something
    got, want = _frames(table), _frames(_widened(table))
    for name, frame in want.items():
        pd.testing.assert_frame_equal(got[name], frame, check_dtype=False, check_exact=True, obj=name)


def test_sums_of_int32_durations_do_not_wrap() -> None:
    """Durations that fit int32 whose sums do not: kernel, category and range totals stay exact."""
    n, dur = 3000, 2**30  # 3000 kernels of ~1.07 s: 3.2e12 ns in total, far past 2**31
    cols = empty_columns(n + 4)
    cols["name_id"][:] = 0
    cols["name_id"][n:] = 1
    cols["kind"][:n] = int(Kind.KERNEL)
    cols["kind"][n:] = int(Kind.USER_ANNOTATION)
    cols["ts_ns"][:] = np.arange(n + 4, dtype=np.int64) * dur * 2
    cols["dur_ns"][:] = dur
    cols["stream"][:n] = 7
    cols["device"][:n] = 0
    cols["pid"][:] = 1
    cols["tid"][:] = 1
    cols["rank"][:] = 0
    table = EventTable(narrow_columns(cols), ("kernel_a", "range_b"))
    assert table["dur_ns"].dtype == np.int32
    k = kernel_summary(table)
    assert int(k.loc[0, "total_ns"]) == n * dur and int(k.loc[0, "count"]) == n
    assert int(category_summary(table)["total_ns"].sum()) == n * dur
    r = range_projection(table)
    assert int(r.loc[0, "cpu_time_ns"]) == 4 * dur


@pytest.mark.slow
@pytest.mark.parametrize("path", TRACES[:3], ids=lambda p: p.name)
def test_range_projection_is_the_same_in_small_chunks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _load(path)
    whole = range_projection(table, by_rank=True)
    monkeypatch.setattr(ranges_mod, "CHUNK_RANGES", 97)  # many blocks, ranges cut at block edges
    monkeypatch.setattr(ranges_mod, "OPS_PER_BATCH", 5)  # batches smaller than one range's ops
    pd.testing.assert_frame_equal(range_projection(table, by_rank=True), whole, check_exact=True)
    assert len(whole) and int(whole["gpu_ops"].sum()) > 0


@pytest.mark.parametrize(
    ("lo", "hi", "dtype"),
    [(0, 0, np.int8), (-1, 127, np.int8), (0, 128, np.int16), (-129, 0, np.int16), (0, 2**31 - 1, np.int32),
     (0, 2**31, np.int64), (-(2**31), 5, np.int32), (5, 5, np.int8)],
)
def test_int_dtype_for_holds_the_range_and_minus_one(lo: int, hi: int, dtype: type) -> None:
    assert int_dtype_for(lo, hi) == np.dtype(dtype)


def test_narrowest_keeps_values_and_broadcast_constants() -> None:
    a = np.asarray([-1, 3, 300], dtype=np.int64)
    assert narrowest(a).dtype == np.int16 and narrowest(a).tolist() == a.tolist()
    const = np.broadcast_to(np.asarray(-1, dtype=np.int64), (10,))
    got = narrowest(const)
    assert got.dtype == np.int8 and got.strides == (0,) and got.tolist() == [-1] * 10


@pytest.mark.parametrize("ids", [[], [3], [1, 5, 9, 2], list(range(0, 400, 7)), [-5, 0, 2**40, 7]])
def test_member_is_isin(ids: list[int]) -> None:
    rng = np.random.default_rng(1)
    for dtype in (np.int8, np.int32, np.int64):
        lo, hi = max(np.iinfo(dtype).min, -50), min(np.iinfo(dtype).max, 500)
        values = rng.integers(lo, hi, 5000).astype(dtype)
        assert np.array_equal(member(values, ids), np.isin(values, ids))
