"""The kernel table's two ways of summarising a group of ops (one group at a time, or many small
groups in one vectorised batch) give the same rows, on real traces and on many-name tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfkit.analyzers.kernel_summary as ks
from perfkit.analyzers.event_table import EventTable, Kind, empty_columns, narrow_columns
from perfkit.analyzers.kernel_summary import kernel_summary
from perfkit.analyzers.loaders.trace_files import load_trace_files

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO.parent / "shared" / "bench"
TRACES = [BENCH / "traces" / "hta_nccl_data_a100.json.gz", BENCH / "nsys" / "h100_2gpu_1s.sqlite",
          REPO / "examples" / "traces" / "alexnet-a100.json.gz"]


def _each_way(table: EventTable, monkeypatch: pytest.MonkeyPatch, by_rank: bool) -> list[pd.DataFrame]:
    out = []
    for loop_min, batch in ((1, 1 << 20), (1 << 40, 1 << 20), (1 << 40, 7)):  # all looped; all batched; tiny batches
        monkeypatch.setattr(ks, "LOOP_MIN", loop_min)
        monkeypatch.setattr(ks, "BATCH_OPS", batch)
        out.append(kernel_summary(table, by_rank=by_rank))
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_looped_and_batched_groups_agree_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    table = load_trace_files([path])
    for by_rank in (False, True):
        first, *others = _each_way(table, monkeypatch, by_rank)
        assert len(first) > 5
        for other in others:
            pd.testing.assert_frame_equal(other, first, check_exact=True)


def test_many_names_with_ties_and_graph_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    n, k = 4000, 900
    cols = empty_columns(n)
    cols["name_id"][:] = rng.integers(0, k, n)
    cols["kind"][:] = int(Kind.KERNEL)
    cols["ts_ns"][:] = np.sort(rng.integers(0, 10**9, n))
    cols["dur_ns"][:] = rng.integers(1, 5, n) * 1000  # many equal durations: the first op of ties matters
    cols["stream"][:], cols["device"][:], cols["pid"][:], cols["tid"][:] = 7, 0, 1, 7
    cols["rank"][:] = rng.integers(0, 2, n)
    table = EventTable(narrow_columns(cols), tuple(f"k{i}" for i in range(k)))
    first, *others = _each_way(table, monkeypatch, by_rank=True)
    for other in others:
        pd.testing.assert_frame_equal(other, first, check_exact=True)
    # against plain pandas: counts, totals, min / max / median per (rank, name)
    ref = pd.DataFrame({"rank": cols["rank"], "name": np.asarray([f"k{i}" for i in cols["name_id"]]), "d": cols["dur_ns"]})
    g = ref.groupby(["rank", "name"])["d"].agg(["size", "sum", "min", "max", "median"]).reset_index()
    got = first.set_index(["rank", "name"]).loc[list(zip(g["rank"], g["name"], strict=True))]
    assert got["count"].tolist() == g["size"].tolist() and got["total_ns"].tolist() == g["sum"].tolist()
    assert got["min_ns"].tolist() == g["min"].tolist() and got["max_ns"].tolist() == g["max"].tolist()
    assert np.allclose(got["p50_ns"].to_numpy(), g["median"].to_numpy())
