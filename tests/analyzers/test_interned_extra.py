"""Launch configurations are interned (a code per kernel into the distinct ones): every value
read back equals the export's raw SQL, through take, concat and the kernel table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

import perfkit.analyzers.row_codes as row_codes_mod
from perfkit.analyzers.event_table import EventTable, Kind, concat_tables, empty_columns
from perfkit.analyzers.kernel_summary import kernel_summary
from perfkit.analyzers.loaders.nsys.gpu import KERNEL_CONFIG
from perfkit.analyzers.loaders.nsys.sqlite import load_nsys
from perfkit.analyzers.row_codes import Interner, row_codes

NSYS = Path(__file__).resolve().parents[3] / "shared" / "bench" / "nsys"
EXPORTS = ("h100_2gpu_1s.sqlite", "mfu_2gpu_before.sqlite")


def _export(name: str) -> Path:
    path = NSYS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def _feed(interner: Interner, cols: dict[str, np.ndarray], chunk: int) -> None:
    for a in range(0, len(next(iter(cols.values()))), chunk):
        interner.add([c[a : a + chunk] for c in cols.values()])


def test_interner_round_trips_chunk_by_chunk() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    cols = {"a": rng.integers(-1, 4, n).astype(np.int8), "b": rng.integers(0, 3, n) * 100_000}
    interner = Interner({"a": np.int8, "b": np.int32}, n)
    _feed(interner, cols, 333)  # chunks cut the rows anywhere
    distinct, code = interner.result()
    assert code is not None and code.dtype == np.int8
    assert len(distinct["a"]) == len({(a, b) for a, b in zip(cols["a"], cols["b"], strict=True)})
    assert distinct["a"].dtype == np.int8 and distinct["b"].dtype == np.int32
    for k in cols:
        assert (distinct[k][code] == cols[k]).all()
    c, first = row_codes([np.array([3, 1, 3, 2])])
    assert c.tolist() == [2, 0, 2, 1] and first.tolist() == [1, 3, 0]  # codes follow the values' order


def test_interner_keeps_every_rows_values_when_rows_are_mostly_distinct(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(row_codes_mod, "MIN_DISTINCT", 100)
    n = 4000
    rng = np.random.default_rng(3)
    cols = {"a": np.arange(n, dtype=np.int64) // 3, "b": rng.integers(0, 2, n)}  # ~1 distinct per 2 rows
    interner = Interner({"a": np.int32, "b": np.int8}, n)
    _feed(interner, cols, 512)
    values, code = interner.result()
    assert code is None  # stopped interning: row i has values i
    for k in cols:
        assert (values[k] == cols[k]).all()
    table = EventTable(empty_columns(n), (), extra=values, extra_rows=np.arange(n, dtype=np.int32), extra_code=code)
    assert (table.extra_at("a", np.arange(n)[::-7]) == cols["a"][::-7]).all()


@pytest.mark.parametrize("name", EXPORTS)
def test_launch_configuration_equals_raw_sql_per_kernel(name: str) -> None:
    path = _export(name)
    table = load_nsys(path)
    sql_cols = [column for column, _ in KERNEL_CONFIG.values()]
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute(f"SELECT {', '.join(f'COALESCE({c}, -1)' for c in sql_cols)} "
                            "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid").fetchall()
        n_distinct = conn.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(sql_cols)} "
                                  "FROM CUPTI_ACTIVITY_KIND_KERNEL)").fetchone()[0]
    expected = np.asarray(rows, dtype=np.int64)
    kernels = np.flatnonzero(table.mask_kind(Kind.KERNEL))
    got = table.extras_at(tuple(KERNEL_CONFIG), kernels)
    assert (np.stack([got[k].astype(np.int64) for k in KERNEL_CONFIG], axis=1) == expected).all()
    assert len(table.extra["grid_x"]) == n_distinct < len(kernels) // 10  # a few distinct, many kernels
    others = np.flatnonzero(~table.mask_kind(Kind.KERNEL))
    assert (table.extra_at("registers", others) == -1).all()
    # a part of the table (every third row) and two tables one after the other keep each row's values
    pick = np.arange(0, len(table), 3)
    part = table.take(pick)
    assert (part.extra_at("grid_x", np.arange(len(part))) == table.extra_at("grid_x", pick)).all()
    both = concat_tables([part, table])
    rows_b = np.arange(len(part), len(both))
    assert (both.extra_at("dynamic_smem_bytes", rows_b) == table.extra_at("dynamic_smem_bytes", np.arange(len(table)))).all()
    assert (both.extra_at("block_x", np.arange(len(part))) == part.extra_at("block_x", np.arange(len(part)))).all()


@pytest.mark.parametrize("name", EXPORTS)
def test_configs_per_kernel_name_equal_raw_sql(name: str) -> None:
    path = _export(name)
    table = load_nsys(path)
    out = kernel_summary(table).set_index("name")
    cfg = "gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory"
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            f"SELECT s.value, count(*), max(n) FROM (SELECT demangledName AS d, {cfg}, count(*) AS n "
            f"FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName, {cfg}) JOIN StringIds s ON s.id = d "
            "GROUP BY d").fetchall()
    assert rows
    for kernel, n_configs, _ in rows:
        assert out.loc[kernel, "configs"] == n_configs, kernel
    # the shown configuration is the most frequent one: its block matches SQL's for a multi-config name
    multi = [(k, c) for k, c, _ in rows if c > 1]
    for kernel, _ in multi[:5]:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
            top = conn.execute(
                f"SELECT blockX, blockY, blockZ, count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                f"ON s.id = k.demangledName WHERE s.value = ? GROUP BY {cfg} ORDER BY n DESC", (kernel,)).fetchall()
        if len(top) > 1 and top[0][3] == top[1][3]:
            continue  # a tie: perfkit shows the smallest, SQL's order is unspecified
        assert out.loc[kernel, "block"] == f"{top[0][0]}x{top[0][1]}x{top[0][2]}", kernel
