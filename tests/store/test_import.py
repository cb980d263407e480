"""`perfkit store import`: an export written into an empty store, merged into one that holds runs
(ids renumbered, foreign keys following), into PostgreSQL and back, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfkit.core.errors import StoreError
from perfkit.store.api import open_existing_store, open_store, store_run
from perfkit.store.export import export_store
from perfkit.store.import_ import import_store
from perfkit.store.read import kernel_table, load_run, run_metrics
from tests.store import factory as f
from tests.store.store_contents import fill_store, table_sums

pytestmark = pytest.mark.slow


def _runs(url: str, ids: list[str]) -> dict[str, Any]:
    """Each run as the store gives it back: the record, its metrics with samples, its kernels."""
    engine = open_existing_store(url)
    assert engine is not None
    try:
        with engine.connect() as conn:
            return {i: (load_run(conn, i), run_metrics(conn, i), kernel_table(conn, i)) for i in ids}
    finally:
        engine.dispose()


@pytest.fixture
def exported(tmp_path: Path) -> tuple[str, list[str], Path]:
    url = f"sqlite:///{tmp_path / 'source.db'}"
    ids = fill_store(url)
    out = tmp_path / "export"
    export_store(url, out)
    return url, ids, out


def test_round_trip_into_a_new_store(exported: tuple[str, list[str], Path], db_url: str) -> None:
    source, ids, out = exported
    target = db_url  # a new store of each backend
    result = import_store(out, target)
    assert result.runs_imported == len(ids) and result.runs_skipped == 0 and not result.shifted
    assert table_sums(target) == table_sums(source)  # ids kept as exported: identical tables
    assert _runs(target, ids) == _runs(source, ids)
    store_run(f.make_run("after", [1e-3] * 5), target)  # the id sequences go on past the imported ids


def test_merge_renumbers_ids_and_keeps_every_link(exported: tuple[str, list[str], Path], db_url: str) -> None:
    source, ids, out = exported
    target = db_url
    own = fill_store(target, n_runs=3, prefix="own")
    own_before, own_sums = _runs(target, own), table_sums(target)
    result = import_store(out, target)
    assert set(result.shifted) == {"points", "metrics", "kernels"}
    assert _runs(target, ids) == _runs(source, ids)  # samples found through the renumbered metric ids
    assert _runs(target, own) == own_before
    counts, merged = table_sums(source), table_sums(target)
    for table in ("runs", "points", "metrics", "samples", "kernels"):
        assert merged[table][0] == counts[table][0] + own_sums[table][0]


def test_every_backend_exports_what_an_import_gives_back(db_url: str, tmp_path: Path) -> None:
    ids = fill_store(db_url)
    out = tmp_path / "from-backend"
    manifest = export_store(db_url, out)
    assert {t.name: (t.rows, t.checksum) for t in manifest.tables} == table_sums(db_url)
    back = f"sqlite:///{tmp_path / 'back.db'}"
    import_store(out, back)
    assert table_sums(back) == table_sums(db_url)
    assert _runs(back, ids) == _runs(db_url, ids)


def test_runs_already_there_are_refused_or_skipped(exported: tuple[str, list[str], Path], tmp_path: Path) -> None:
    source, ids, out = exported
    part = f"sqlite:///{tmp_path / 'part.db'}"
    partial = tmp_path / "partial"
    engine = open_store(part)
    engine.dispose()
    import_store(out, part)
    engine = open_store(part)  # keep runs 00 and 01 only, then export that as the "already there" part
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM runs WHERE run_id NOT IN ('run00', 'run01')")
    engine.dispose()
    export_store(part, partial)
    target = f"sqlite:///{tmp_path / 'target.db'}"
    import_store(partial, target)
    before = table_sums(target)
    with pytest.raises(StoreError, match=r"already holds 2 of the 6 runs in .*\(run00, run01\); pass --skip-existing"):
        import_store(out, target)
    assert table_sums(target) == before
    result = import_store(out, target, skip_existing=True)
    assert (result.runs_imported, result.runs_skipped) == (4, 2)
    got, want = table_sums(target), table_sums(source)
    assert {t: n for t, (n, _) in got.items()} == {t: n for t, (n, _) in want.items()}
    assert got["runs"] == want["runs"]  # the other tables' ids of the four runs were shifted
    assert _runs(target, ids) == _runs(source, ids)
    again = import_store(out, target, skip_existing=True)
    assert (again.runs_imported, again.runs_skipped, sum(again.rows.values())) == (0, 6, 0)


def test_a_read_back_that_disagrees_rolls_everything_back(exported: tuple[str, list[str], Path],
                                                          tmp_path: Path) -> None:
    _source, _ids, out = exported
    target = f"sqlite:///{tmp_path / 'trigger.db'}"
    fill_store(target, n_runs=2, prefix="own")
    engine = open_store(target)
    with engine.begin() as conn:  # a store altered by hand: every kernel row written is changed
        conn.exec_driver_sql("CREATE TRIGGER bump AFTER INSERT ON kernels BEGIN "
                             "UPDATE kernels SET calls = calls + 1 WHERE id = NEW.id; END")
    engine.dispose()
    before = table_sums(target)
    with pytest.raises(StoreError, match=r"table kernels read back 12 rows .* nothing was imported \(rolled back\)"):
        import_store(out, target)
    assert table_sums(target) == before


def test_a_failed_import_into_a_new_file_leaves_no_file(exported: tuple[str, list[str], Path],
                                                        tmp_path: Path) -> None:
    _source, _ids, out = exported
    (out / "samples.parquet").unlink()
    with pytest.raises(StoreError, match=r"samples\.parquet: missing"):
        import_store(out, f"sqlite:///{tmp_path / 'new.db'}")
    assert not (tmp_path / "new.db").exists()


@pytest.mark.postgres
def test_sqlite_to_postgres_and_back(exported: tuple[str, list[str], Path], tmp_path: Path, postgres_url: str) -> None:
    source, ids, out = exported
    for pg in f.fresh_pg_database(postgres_url, tmp_path.name):
        result = import_store(out, pg)
        assert result.runs_imported == len(ids)
        assert table_sums(pg) == table_sums(source)
        assert _runs(pg, ids) == _runs(source, ids)
        again = tmp_path / "from-pg"
        manifest = export_store(pg, again)
        assert {t.name: (t.rows, t.checksum) for t in manifest.tables} == table_sums(source)
        back = f"sqlite:///{tmp_path / 'back.db'}"
        import_store(again, back)
        assert table_sums(back) == table_sums(source)
        store_run(f.make_run("after", [1e-3] * 5), pg)  # the sequences were moved past the explicit ids
        merged = import_store(out, pg, skip_existing=True)
        assert merged.runs_skipped == len(ids)
        own = tmp_path / "own"
        other = f"sqlite:///{tmp_path / 'other.db'}"
        fill_store(other, n_runs=2, prefix="other")
        export_store(other, own)
        shifted = import_store(own, pg)  # a merge on PostgreSQL: ids renumbered past the sequences' values
        assert set(shifted.shifted) == {"points", "metrics", "kernels"}
        assert _runs(pg, ["other00", "other01"]) == _runs(other, ["other00", "other01"])
