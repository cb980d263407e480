"""The blockwise (bounded-memory) interval functions against simple references.

Each function is run with tiny blocks (so block boundaries fall inside groups, inside merged
runs and between masked-out rows) and compared with a per-group merge written in plain Python.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import perfkit.analyzers.temporal as temporal
from perfkit.analyzers.idle import stream_order, stream_sort
from perfkit.analyzers.intervals import grouped_extent, grouped_union_ns
from perfkit.analyzers.temporal import pair_codes, rank_index, step_codes

BLOCKS = (1, 2, 3, 7, 1 << 17)


def _union_ref(g: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> np.ndarray:
    """Per group: merge the group's intervals sorted by start (stable) and sum the runs."""
    out = np.zeros(n, dtype=np.int64)
    for k in range(n):
        rows = sorted(zip(s[g == k].tolist(), e[g == k].tolist(), strict=True), key=lambda r: r[0])
        total, run_start, run_end = 0, None, None
        for a, b in rows:
            if run_end is not None and a <= run_end:
                run_end = max(run_end, b)
                continue
            if run_end is not None:
                total += run_end - run_start
            run_start, run_end = a, b
        if run_end is not None:
            total += run_end - run_start
        out[k] = total
    return out


def _random(rng: np.random.Generator, n: int, n_groups: int, sort: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = rng.integers(0, n_groups, n)
    s = rng.integers(0, 60, n)
    dur = rng.integers(0, 15, n) * (rng.random(n) < 0.8)  # zero-length intervals too
    dur[rng.random(n) < 0.1] = 50  # long ones that nest the next few
    if sort:
        order = np.lexsort((s, g))
        g, s, dur = g[order], s[order], dur[order]
    return g, s, s + dur


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_grouped_union_matches_merge(block: int, sort: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, n_groups = int(rng.integers(0, 80)), int(rng.integers(1, 6))
    g, s, e = _random(rng, n, n_groups, sort)
    assert np.array_equal(grouped_union_ns(g, s, e, n_groups, block=block), _union_ref(g, s, e, n_groups))
    where = rng.random(n) < 0.6
    got = grouped_union_ns(g.astype(np.int8), s.astype(np.int32), e, n_groups, where=where, block=block)
    assert np.array_equal(got, _union_ref(g[where], s[where], e[where], n_groups))


@pytest.mark.parametrize("block", BLOCKS)
def test_grouped_union_edge_cases(block: int) -> None:
    empty = np.empty(0, dtype=np.int64)
    assert grouped_union_ns(empty, empty, empty, 3, block=block).tolist() == [0, 0, 0]
    assert grouped_union_ns(empty, empty, empty, 0, block=block).tolist() == []
    g = np.array([0, 0, 0, 1, 1, 1])
    s = np.array([0, 2, 3, 5, 5, 9])
    e = np.array([10, 4, 12, 5, 5, 9])  # nested, overlapping; group 1 all zero-length
    assert grouped_union_ns(g, s, e, 2, block=block).tolist() == [12, 0]
    assert grouped_union_ns(g, s, e, 3, where=np.zeros(6, dtype=bool), block=block).tolist() == [0, 0, 0]
    # a run that crosses blocks and a group that starts again after an unsorted row
    g2 = np.array([1, 1, 0, 1])
    s2 = np.array([0, 5, 0, 3])
    e2 = np.array([6, 7, 1, 4])
    assert grouped_union_ns(g2, s2, e2, 2, block=block).tolist() == [1, 7]
    huge = np.array([1 << 60, (1 << 60) + 5])  # ends far apart: the per-block cummax's other path
    assert grouped_union_ns(np.array([0, 1]), huge - 1, huge, 2, block=block).tolist() == [1, 1]


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_grouped_extent(block: int, sort: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, n_groups = int(rng.integers(0, 60)), 5
    g, s, e = _random(rng, n, n_groups, sort)
    where = rng.random(n) < 0.5
    first, last, count = grouped_extent(g.astype(np.int16), s, e, n_groups, where=where, block=block)
    for k in range(n_groups):
        rows = (g == k) & where
        assert count[k] == rows.sum()
        assert first[k] == (s[rows].min() if rows.any() else np.iinfo(np.int64).max)
        assert last[k] == (e[rows].max() if rows.any() else np.iinfo(np.int64).min)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("seed", range(4))
def test_step_codes_match_pair_codes(block: int, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 50))
    ranks = np.array([-1, 0, 3, 8])
    rank_idx = rng.integers(0, len(ranks), n).astype(np.int8)
    step = rng.integers(-1, 6, n).astype(np.int32) + 100 * (seed % 2)
    keep = step >= 0
    (r, s), codes = pair_codes(ranks[rank_idx[keep]], step[keep])
    for dense in (1 << 20, 0):  # the dense count and the hashing fallback
        monkeypatch.setattr(temporal, "_DENSE_PAIRS", dense)
        (r2, s2), codes2 = step_codes(ranks, rank_idx, step, keep, block=block)
        assert r2.tolist() == r.tolist() and s2.tolist() == s.tolist()
        assert codes2[keep].tolist() == codes.tolist()


def test_rank_index() -> None:
    op_rank = np.array([0, 0, 1, 1, 1], dtype=np.int8)
    assert rank_index([0, 1], op_rank) is op_rank  # ranks 0..n-1: the column itself
    got = rank_index([2, 5, 9], np.array([2, 9, 9, 5], dtype=np.int16), block=3)
    assert got.tolist() == [0, 2, 2, 1] and got.dtype == np.int8


def _stream_order_ref(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lexsort-based stream order: (order, same-stream flag, running max of earlier ends)."""
    rank, stream = ops["rank"].to_numpy(), ops["stream"].to_numpy()
    order = np.lexsort((ops["ts_ns"].to_numpy(), stream, rank))
    rank, stream = rank[order], stream[order]
    end = (ops["ts_ns"].to_numpy() + ops["dur_ns"].to_numpy())[order]
    same = np.zeros(len(order), dtype=bool)
    same[1:] = (rank[1:] == rank[:-1]) & (stream[1:] == stream[:-1])
    prev_end = np.zeros(len(order), dtype=np.int64)
    run = 0
    for i in range(len(order)):
        run = max(run, int(end[i])) if same[i] else int(end[i])
        if i + 1 < len(order):
            prev_end[i + 1] = run
    return order, same, prev_end


def _ops(rng: np.random.Generator, n: int, sort: bool) -> pd.DataFrame:
    ts = rng.integers(0, 40, n)
    ops = pd.DataFrame(
        {
            "rank": rng.choice(np.array([0, 2, 5], dtype=np.int8), n),
            "stream": rng.choice(np.array([7, 20, 3], dtype=np.int16), n),
            "ts_ns": ts,
            "dur_ns": rng.integers(0, 12, n).astype(np.int8),
        }
    )
    return ops.sort_values(["rank", "ts_ns"], kind="stable", ignore_index=True) if sort else ops


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_stream_order_matches_lexsort(block: int, sort: bool, seed: int) -> None:
    ops = _ops(np.random.default_rng(seed), int(np.random.default_rng(seed).integers(0, 70)), sort)
    order, same, prev_end = stream_order(ops, block=block)
    ref_order, ref_same, ref_prev = _stream_order_ref(ops)
    assert order.tolist() == ref_order.tolist()
    assert same.tolist() == ref_same.tolist()
    assert prev_end.tolist() == ref_prev.tolist()
    _, starts = stream_sort(ops, block=block)
    assert starts.tolist() == np.flatnonzero(~ref_same).tolist()
