"""The nsys loader's fast read (analyzers/loaders/nsys/trusted.py): no SQL pre-scan of a clean
export, the checked read (scan, counts, filters) for any export with a row the checks would
touch, including values the fast read's own encoding could hide (a stored -2^63, which is how it
fetches NULL; a real, which numpy would truncate to an integer)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from perfkit.analyzers.event_table import Kind
from perfkit.analyzers.loaders.nsys import checks
from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.analyzers.loaders.nsys.trusted import SENTINEL, Damaged, verify
from tests.helpers.nsys_export import KERNEL, NVTX, RUNTIME, damaged_copy, write_tiny_export

SHARED = Path(__file__).resolve().parents[4].parent / "shared" / "bench" / "nsys"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_export(tmp_path_factory.mktemp("nsys") / "clean.sqlite")


def _scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables the checks scan in SQL (TableCheck.run), recorded as they are scanned."""
    scanned: list[str] = []
    run = checks.TableCheck.run

    def counted(self: checks.TableCheck) -> checks.TableCheck:
        scanned.append(self.table)
        return run(self)

    monkeypatch.setattr(checks.TableCheck, "run", counted)
    return scanned


@pytest.mark.parametrize("name", ["tiny", "mfu_2gpu_before.sqlite"])
def test_a_clean_export_is_read_without_a_scan(clean: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = clean if name == "tiny" else SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    scanned = _scans(monkeypatch)
    table = load_nsys(path)
    assert scanned == []
    meta = table.meta[0]
    if name == "tiny":
        assert (meta.dropped, meta.coerced, meta.warnings) == ((), (), ())
        assert meta.events_read == meta.events_kept == 24 + 4 + 2 + 32 + 6
    with sqlite3.connect(path) as conn:
        kernels = conn.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0]
    assert int((table.columns["kind"] == int(Kind.KERNEL)).sum()) == kernels


@pytest.mark.parametrize(("sql", "coerced"), [
    # NULL is fetched as -2^63: a stored -2^63 must still be counted as read as absent
    (f"UPDATE {KERNEL} SET correlationId = -9223372036854775807 - 1 WHERE rowid = 2;", f"{KERNEL}.correlationId"),
    (f"UPDATE {RUNTIME} SET nameId = -9223372036854775807 - 1 WHERE rowid = 2;", f"{RUNTIME}.nameId"),
    # a real is no integer to the checks (struct's "q" refuses it where numpy would truncate it)
    (f"UPDATE {KERNEL} SET gridX = 2.5 WHERE rowid = 2;", f"{KERNEL}.gridX"),
    (f"UPDATE {NVTX} SET textId = 30.5 WHERE rowid = 2;", f"{NVTX}.textId"),
])
def test_values_the_fast_read_could_hide_go_to_the_checked_read(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, coerced: str) -> None:
    path = damaged_copy(clean, tmp_path, sql)
    scanned = _scans(monkeypatch)
    meta = load_nsys(path).meta[0]
    assert KERNEL in scanned and NVTX in scanned  # the whole export read again, checked
    assert [n for k, n in meta.coerced if k.startswith(coerced + ":")] == [1], meta.coerced


@pytest.mark.parametrize(("sql", "dropped"), [
    (f"UPDATE {KERNEL} SET \"end\" = 'soon' WHERE rowid = 2;", f"{KERNEL}.end not an integer"),
    (f'UPDATE {NVTX} SET "end" = NULL WHERE rowid = 2;', f"{NVTX}.end NULL (the range did not end)"),
    (f'UPDATE {RUNTIME} SET "end" = start - 1 WHERE rowid = 3;', f"{RUNTIME}.end before start"),
])
def test_a_row_left_out_is_counted_by_the_checked_read(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, dropped: str) -> None:
    path = damaged_copy(clean, tmp_path, sql)
    scanned = _scans(monkeypatch)
    meta = load_nsys(path).meta[0]
    assert scanned and dict(meta.dropped)[dropped] == 1
    assert any("rowid" in w and "left out" in w for w in meta.warnings)


def test_verify_on_arrays(clean: Path) -> None:
    from perfkit.analyzers.loaders.nsys.gpu import gpu_check
    from perfkit.analyzers.loaders.nsys.schema import open_export

    with open_export(clean) as export:
        export.trusting = True
        check = gpu_check(export, KERNEL)
    n = 3
    ok = {"start": np.array([0, 10, 20]), "end": np.array([5, 10, 25]), "deviceId": np.zeros(n, dtype=np.int64),
          "streamId": np.full(n, 7), **{c.column: np.full(n, SENTINEL) for c in check.cleans}}
    raw = {k: np.asarray(v, dtype=np.int64) for k, v in ok.items()}
    verify(check, raw)  # NULLs read as their default
    assert all((raw[c.column] == c.default).all() for c in check.cleans)
    for column, values in [("end", [5, 9, 25]), ("deviceId", [0, -1, 0]), ("streamId", [7, 1 << 32, 7]),
                           ("correlationId", [1, -7, 2]), ("end", [5, 10, 20 + (1 << 48) + 1])]:
        bad = {k: np.asarray(v, dtype=np.int64).copy() for k, v in ok.items()}
        bad[column] = np.asarray(values, dtype=np.int64)
        with pytest.raises(Damaged):
            verify(check, bad)
