"""The innermost open `nccl:` range per launch, by one sweep: equal to walking back over every
earlier range (the definition) on random nested, overlapping and tied ranges."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.analyzers.collectives.ranges import _innermost


def _walk_back(launch_ts: list[int], starts: list[int], ends: list[int]) -> list[int]:
    out = []
    for t in launch_ts:
        j = int(np.searchsorted(starts, t, side="right")) - 1
        while j >= 0 and ends[j] < t:
            j -= 1
        out.append(j)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_sweep_equals_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    starts = rng.integers(0, 200, n)
    ends = starts + rng.integers(0, 40, n)
    order = np.lexsort((-ends, starts))
    starts, ends = starts[order], ends[order]
    launch_ts = rng.integers(0, 260, int(rng.integers(1, 80)))
    rows = np.arange(100, 100 + n)  # table rows of the ranges, by position
    found = np.full(len(launch_ts), -1, dtype=np.int64)
    _innermost(found, np.arange(len(launch_ts)), launch_ts, rows, starts, ends)
    want = [rows[j] if j >= 0 else -1 for j in _walk_back(launch_ts.tolist(), starts.tolist(), ends.tolist())]
    assert found.tolist() == want
