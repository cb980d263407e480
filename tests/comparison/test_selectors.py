"""Run selectors and the gate's history lookup on a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest

from perfkit.comparison.gate_history import HistoryLookup
from perfkit.comparison.selectors import Reference, resolve, resolve_pair
from perfkit.core.errors import StoreError
from perfkit.store.api import open_store, store_run
from tests.store import factory as f


def _store(url: str) -> None:
    for i in range(6):
        pts = [f.gemm_point(f.noisy(1e-3, 5, 10 * i + j), key=f"gemm/mm/m={j}") for j in range(3)]
        store_run(f.make_run(f"main{i}", points=pts, created=f"2026-01-0{i + 1}T00:00:00Z", commit=f"c{i}"), url)
    store_run(f.make_run("pr1", f.noisy(2e-3, 5, 99), branch="pr", created="2026-01-03T12:00:00Z",
                         points=[f.gemm_point(f.noisy(2e-3, 5, 99), key="gemm/mm/m=0")]), url)


@pytest.mark.slow
def test_branch_at_gpu_skips_the_candidate(db_url: str) -> None:
    _store(db_url)
    engine = open_store(db_url)
    try:
        assert resolve("main@H100", engine).run_id == "main5"
        assert resolve("main@H100", engine, Reference("main5", "demo", "H100")).run_id == "main4"
        assert resolve("c3", engine, Reference("main5", "demo", "H100")).run_id == "main3"  # a commit
        base, cand = resolve_pair("main@H100", "main@H100", engine)
        assert (base.run_id, cand.run_id) == ("main4", "main5")
        with pytest.raises(StoreError, match="the only stored run of branch 'pr'"):
            resolve_pair("pr@H100", "pr1", engine)
        with pytest.raises(StoreError, match="same run"):
            resolve_pair("main3", "main3", engine)
    finally:
        engine.dispose()


def test_bulk_history_equals_one_metric_at_a_time(db_url: str) -> None:
    _store(db_url)
    engine = open_store(db_url)
    try:
        base, cand = resolve_pair("main4", "main5", engine)
        names = [m.name for m in cand.metrics]
        bulk = HistoryLookup(engine, cand, base, limit=4)
        bulk.prefetch(names)
        single = HistoryLookup(engine, cand, base, limit=4)
        for name in names:
            one: Any = single(name)
            many: Any = bulk.cache[name]
            assert [h.run_id for h in many] == [h.run_id for h in one] == ["main1", "main2", "main3", "main4"]
            assert [h.log_loc for h in many] == pytest.approx([h.log_loc for h in one])
            assert [h.se for h in many] == pytest.approx([h.se for h in one])
        # the baseline's branch only: the pr run (between main2 and main3) is not history
        assert all(h.run_id.startswith("main") for name in names for h in bulk(name))
    finally:
        engine.dispose()
