"""perfkit.store.run_search on a real store (SQLite and, where initdb / pg_ctl are on PATH,
PostgreSQL): the latest run of a branch, GPU and spec; the runs of a commit; the runs closest
to a search that found nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from perfkit.core.env import GpuState
from perfkit.core.errors import StoreError
from perfkit.store.api import open_store, store_run
from perfkit.store.engine import Engine
from perfkit.store.run_search import RunSearch, find_latest, nearby_runs, runs_of_commit
from tests.store.factory import gemm_point, make_run

A100 = GpuState(index=0, name="NVIDIA A100-SXM4-80GB", driver="550.54.15")


def _run(run_id: str, spec: str, day: int, **kw: object) -> object:
    run = make_run(run_id, created=f"2026-01-{day:02d}T00:00:00Z", points=[gemm_point([1e-3] * 5)], **kw)  # type: ignore[arg-type]
    return replace(run, spec={"name": spec, "workloads": [{"name": "not-the-spec-name"}]}, spec_hash=f"h-{spec}")


@pytest.fixture
def store(db_url: str) -> Engine:
    """main: k1 (kernels), m1 (moe, newest) on the H100, k2 (kernels) on the A100; pr: p1 (kernels)."""
    for run in (_run("k1", "kernels", 1, commit="aaaa1111"), _run("m1", "moe", 3, commit="aaaa1111"),
                _run("k2", "kernels", 4, commit="bbbb2222", gpu=A100),
                _run("p1", "kernels_100%", 2, commit="aaaa9999", branch="pr")):
        store_run(run, db_url)  # type: ignore[arg-type]
    return open_store(db_url)


def test_latest_of_a_spec(store: Engine) -> None:
    with store.connect() as conn:
        def latest(**kw: object) -> str | None:
            row = find_latest(conn, RunSearch(**kw))  # type: ignore[arg-type]
            return None if row is None else row.run_id

        assert latest(branch="main", gpu="H100") == "m1"  # any spec: the newest
        assert latest(branch="main", gpu="H100", spec="kernels") == "k1"
        assert latest(branch="main", gpu="H100", spec="kernels", exclude="k1") is None
        assert latest(branch="main", gpu="a100", spec="kernels") == "k2"
        assert latest(branch="main", gpu="H100", spec="not-the-spec-name") is None  # a workload's name is no spec
        assert latest(branch="pr", gpu="H100", spec="kernels_100%") == "p1"
        assert latest(branch="pr", gpu="H100", spec="kernels") is None  # % and _ are no wildcards
        with pytest.raises(StoreError, match="matches"):
            latest(branch="main", gpu="NVIDIA")
    store.dispose()


def test_runs_of_a_commit(store: Engine) -> None:
    with store.connect() as conn:
        assert [r.run_id for r in runs_of_commit(conn, "aaaa1111")] == ["m1", "k1"]  # newest first
        assert [(r.run_id, r.spec_name) for r in runs_of_commit(conn, "bbbb")] == [("k2", "kernels")]
        assert runs_of_commit(conn, "bbb") == []  # a prefix of fewer than 4 characters names nothing
        with pytest.raises(StoreError, match="ambiguous prefix"):
            runs_of_commit(conn, "aaaa")
    store.dispose()


def test_nearby_runs_rank_what_is_closest(store: Engine) -> None:
    with store.connect() as conn:
        near = nearby_runs(conn, RunSearch("main", "L4", "kernels"))
        assert [b.run_id for b in near][:2] == ["k2", "k1"]  # same branch and spec first, newest first
        near = nearby_runs(conn, RunSearch("dev", "H100", "kernels"))
        assert near[0].run_id == "k1" and "main@NVIDIA H100 80GB HBM3, spec 'kernels'" in near[0].describe()
    store.dispose()
