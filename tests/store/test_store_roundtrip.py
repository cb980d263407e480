"""Store round trips on SQLite and PostgreSQL: runs, points, metrics, raw samples, kernels."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.artifacts import Artifacts
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.env import GpuState
from perfkit.core.errors import StoreError
from perfkit.store import read
from perfkit.store.api import load_stored_run, open_store, store_run
from perfkit.store.run_search import RunSearch, find_latest
from tests.store.factory import failed_point, gemm_point, make_run, noisy

KEY = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16"


def _counts(url: str) -> dict[str, int]:
    engine = open_store(url)
    try:
        with engine.connect() as conn:
            return read.count_rows(conn)
    finally:
        engine.dispose()


def test_run_round_trips_exactly(db_url: str) -> None:
    run = make_run("r1", points=[gemm_point(noisy(1e-3, 25, 1), decode_tok_per_s=[101.0, 99.5, 100.2]),
                                 failed_point()])
    assert store_run(run, db_url) == "r1"
    back = load_stored_run("r1", db_url)
    assert back == run  # every field, every raw sample, bit for bit


def test_metrics_and_samples_are_stored(db_url: str) -> None:
    samples = noisy(2e-3, 11, 2)
    store_run(make_run("r1", samples), db_url)
    engine = open_store(db_url)
    with engine.connect() as conn:
        metrics = {m.name: m for m in read.run_metrics(conn, "r1")}
        counts = read.count_rows(conn)
    engine.dispose()
    assert set(metrics) == {f"{KEY}:time_s", f"{KEY}:flop_per_s", f"{KEY}:bytes_per_s"}
    t = metrics[f"{KEY}:time_s"]
    assert t.samples == tuple(samples) and t.direction == "lower" and t.unit == "s"
    f = metrics[f"{KEY}:flop_per_s"]
    assert f.direction == "higher" and f.samples[0] == pytest.approx(2.0 * 1024**3 / samples[0])
    assert counts == {"runs": 1, "points": 1, "metrics": 3, "samples": 33, "kernels": 0}


def test_storing_twice_is_a_no_op(db_url: str) -> None:
    run = make_run("r1", noisy(1e-3, 5, 3))
    store_run(run, db_url)
    before = _counts(db_url)
    assert store_run(run, db_url) == "r1"
    assert _counts(db_url) == before


def test_run_directory_with_kernel_table(db_url: str, tmp_path: Path) -> None:
    run = make_run("r-dir", noisy(1e-3, 5, 4))
    run = type(run)(**{**run.__dict__, "artifacts": Artifacts(kernels="kernels.json")})
    run_dir = tmp_path / "run-dir"
    write_json_atomic(run_dir / "run.json", to_builtins(run))
    write_json_atomic(run_dir / "kernels.json", [
        {"point": KEY, "name": "sm90_xmma_gemm_bf16", "calls": 10, "total_ns": 1.25e6, "grid": "132x1x1"},
        {"point": KEY, "name": "elementwise_kernel", "calls": 3, "total_ns": 4.0e3},
    ])
    assert store_run(run_dir, db_url) == "r-dir"
    engine = open_store(db_url)
    with engine.connect() as conn:
        table = read.kernel_table(conn, "r-dir")
    engine.dispose()
    assert [k["name"] for k in table] == ["sm90_xmma_gemm_bf16", "elementwise_kernel"]
    assert table[0]["calls"] == 10 and table[0]["total_ns"] == 1.25e6 and table[0]["grid"] == "132x1x1"


@pytest.mark.parametrize("where", ["../outside.json", "/etc/hostname", "link.json"])
def test_artifacts_outside_the_run_directory_are_refused(db_url: str, tmp_path: Path, where: str) -> None:
    """A run.json naming a file elsewhere never makes ingest read it into the store."""
    secret = tmp_path / "outside.json"
    write_json_atomic(secret, [{"point": KEY, "name": "secret", "calls": 1, "total_ns": 1.0}])
    run = make_run("r-out", noisy(1e-3, 5, 4))
    run = type(run)(**{**run.__dict__, "artifacts": Artifacts(kernels=where)})
    run_dir = tmp_path / "run-dir"
    write_json_atomic(run_dir / "run.json", to_builtins(run))
    (run_dir / "link.json").symlink_to(secret)
    with pytest.raises(StoreError, match="points outside the run directory"):
        store_run(run_dir, db_url)
    with pytest.raises(StoreError, match=r"not in the store|no store there"):  # nothing was written
        load_stored_run("r-out", db_url)


def test_failed_write_leaves_store_as_it_was(db_url: str) -> None:
    store_run(make_run("good", noisy(1e-3, 5, 5)), db_url)
    before = _counts(db_url)
    bad = make_run("bad", points=[gemm_point(noisy(1e-3, 5, 6)), gemm_point(noisy(1e-3, 5, 7))])  # same key twice
    with pytest.raises(StoreError, match="nothing was written"):
        store_run(bad, db_url)
    assert _counts(db_url) == before
    with pytest.raises(StoreError, match="not in the store"):
        load_stored_run("bad", db_url)


def test_branch_at_gpu_selects_latest_run(db_url: str) -> None:
    store_run(make_run("old", noisy(1e-3, 5, 1), created="2026-01-01T00:00:00Z"), db_url)
    store_run(make_run("new", noisy(1e-3, 5, 2), created="2026-01-02T00:00:00Z"), db_url)
    store_run(make_run("feat", noisy(1e-3, 5, 3), branch="feature", created="2026-01-03T00:00:00Z"), db_url)
    store_run(make_run("a100", noisy(1e-3, 5, 4), created="2026-01-04T00:00:00Z",
                       gpu=GpuState(name="NVIDIA A100-SXM4-80GB", driver="550.54.15")), db_url)
    engine = open_store(db_url)
    with engine.connect() as conn:

        def latest(branch: str, gpu: str) -> str | None:
            row = find_latest(conn, RunSearch(branch, gpu))
            return None if row is None else row.run_id

        assert latest("main", "H100") == "new"
        assert latest("main", "a100") == "a100"
        assert latest("feature", "NVIDIA H100 80GB HBM3") == "feat"
        with pytest.raises(StoreError, match="matches"):
            latest("main", "NVIDIA")  # two GPUs match
        assert latest("release", "H100") is None
        assert find_latest(conn, RunSearch("main", "H100", exclude="new")).run_id == "old"  # type: ignore[union-attr]
        assert find_latest(conn, RunSearch("main", "H100", spec="demo")).run_id == "new"  # type: ignore[union-attr]
        assert latest("main", "H100") == "new" and find_latest(conn, RunSearch("main", "H100", spec="other")) is None
        assert read.get_run(conn, "fe").run_id == "feat"  # unique prefix
        with pytest.raises(StoreError, match="not in the store"):
            read.get_run(conn, "zzz")
    engine.dispose()


def test_history_is_oldest_first_and_filtered(db_url: str) -> None:
    for i in range(5):
        store_run(make_run(f"r{i}", noisy(1e-3 * (1 + i / 100), 5, i), commit=f"c{i}",
                           created=f"2026-01-0{i + 1}T00:00:00Z"), db_url)
    engine = open_store(db_url)
    with engine.connect() as conn:
        hist = read.metric_history(conn, f"{KEY}:time_s", gpu="NVIDIA H100 80GB HBM3", exclude=["r4"], limit=3)
    engine.dispose()
    assert [h.run_id for h in hist] == ["r1", "r2", "r3"]
    assert all(len(h.samples) == 5 for h in hist)
