"""Rank files decoded in worker processes (a local pool, a real Dask LocalCluster of 2 workers)
give exactly the table one process gives, on real traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.event_table import COLUMNS
from perfkit.analyzers.loaders.trace_files import load_trace_files
from perfkit.core.parallel_map import DASK_LOCAL, LOCAL, Executor

DATA = Path(__file__).resolve().parents[2] / "data" / "traces" / "tracelens"
SOURCES = ("vllm_decode_full_graph.json.gz", "sglang_qwen3_8b_decode.json.gz", "mi210_gpu_only.json.gz",
           "vllm_prefilldecode_piecewise.json.gz")


@pytest.fixture
def rank_files(tmp_path: Path) -> list[Path]:
    """Four real traces as the ranks 0-3 of one job (each file's distributedInfo says its rank)."""
    out = []
    for rank, name in enumerate(SOURCES):
        with gzip.open(DATA / name, "rt") as f:
            trace = json.load(f)
        trace["distributedInfo"] = {**(trace.get("distributedInfo") or {}), "rank": rank, "world_size": len(SOURCES)}
        path = tmp_path / f"rank{rank}.json.gz"
        with gzip.open(path, "wt") as f:
            json.dump(trace, f)
        out.append(path)
    return out


def _same(a: object, b: object) -> None:
    from perfkit.analyzers.event_table import EventTable

    assert isinstance(a, EventTable) and isinstance(b, EventTable)
    assert a.names == b.names and a.args_text == b.args_text and a.meta == b.meta
    for k in COLUMNS:
        np.testing.assert_array_equal(a.columns[k], b.columns[k], err_msg=k)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [LOCAL, DASK_LOCAL])
def test_workers_give_the_one_process_table(kind: str, rank_files: list[Path]) -> None:
    if kind == DASK_LOCAL:
        pytest.importorskip("distributed")
    one = load_trace_files(rank_files)
    assert sorted(set(one.columns["rank"].tolist())) == [0, 1, 2, 3]
    _same(one, load_trace_files(rank_files, Executor(kind, 2)))
