"""Launch configurations are interned (a code per kernel into the distinct ones): every value
read back equals the export's raw SQL, through take, concat and the kernel table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from analyzers.event_table import Kind, concat_tables
from analyzers.kernel_summary import kernel_summary
from analyzers.nsys_gpu import KERNEL_CONFIG
from analyzers.nsys_sqlite import load_nsys
from analyzers.row_codes import intern_rows, row_codes

NSYS = Path(__file__).resolve().parents[3] / "shared" / "bench" / "nsys"
EXPORTS = ("h100_2gpu_1s.sqlite", "mfu_2gpu_before.sqlite")


def _export(name: str) -> Path:
    path = NSYS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def test_intern_rows_round_trips_and_orders_codes_like_values() -> None:
    rng = np.random.default_rng(7)
    cols = {"a": rng.integers(-1, 4, 5000).astype(np.int8), "b": rng.integers(0, 3, 5000) * 100_000}
    distinct, code = intern_rows(cols)
    assert code.dtype == np.int8 and len(distinct["a"]) == len({(a, b) for a, b in zip(cols["a"], cols["b"], strict=True)})
    for k in cols:
        assert (distinct[k][code] == cols[k]).all()
    pairs = list(zip(distinct["a"].tolist(), distinct["b"].tolist(), strict=True))
    assert pairs == sorted(pairs)  # codes follow the values' lexicographic order
    c, first = row_codes([np.array([3, 1, 3, 2])])
    assert c.tolist() == [2, 0, 2, 1] and first.tolist() == [1, 3, 0]


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
