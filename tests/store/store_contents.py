"""A store worth moving (runs with history, failed points, kernels with non-ASCII names, NULL and
true/false flags) and each table's row count and checksum read straight from a store, for the
`perfkit store export / import` tests."""

from __future__ import annotations

import dataclasses

from perfkit.core.env import GitState
from perfkit.store.api import open_store, store_stored_run
from perfkit.store.checksum import TableChecksum
from perfkit.store.kernel_rows import KernelRow
from perfkit.store.ordered_rows import ordered_select, row_batches
from perfkit.store.read_only import open_read_only
from perfkit.store.records import from_run
from perfkit.store.transfer_tables import transfer_tables
from tests.store import factory as f

Sums = dict[str, tuple[int, str]]  # table -> (rows, checksum)


def fill_store(url: str, n_runs: int = 6, prefix: str = "run") -> list[str]:
    """n_runs runs of one spec (a history the gate reads) into the store at url; their ids."""
    ids = []
    for i in range(n_runs):
        points = [f.gemm_point(f.noisy(1e-3 * (1.2 if i == n_runs - 1 else 1.0), 12, 7 * i + len(prefix)))]
        if i % 2:
            points.append(f.failed_point())
        run_id = f"{prefix.upper()}{i:02d}é" if i == 2 else f"{prefix}{i:02d}"  # orders apart by collation
        run = f.make_run(run_id, points=points, commit=f"{prefix[:3]}{i:04d}",
                         created=f"2026-03-{i + 1:02d}T00:00:00+00:00")
        stored = from_run(run)
        kernels = (KernelRow(None, f"gemm_kernel_ünïcode_{i}", 10 + i, 1234.5 * (i + 1), {"grid": [i, 1]}),
                   KernelRow(f.gemm_point([1.0]).key, "-0 kernel", 1, -0.0))
        dirty = None if i == 0 else bool(i % 3)
        env = dataclasses.replace(run.env, git=GitState(commit=run.env.git.commit, branch="main", dirty=dirty))
        store_stored_run(dataclasses.replace(stored, kernels=kernels, dirty=dirty, env=env), url)
        ids.append(run.run_id)
    return ids


def table_sums(url: str) -> Sums:
    """Every table's row count and checksum, read from the store at url."""
    engine = open_read_only(url)
    assert engine is not None
    sums: Sums = {}
    try:
        with engine.connect() as conn:
            for table in transfer_tables():
                acc = TableChecksum(table.kinds)
                for rows in row_batches(conn, table, ordered_select(conn, table)):
                    acc.update(rows)
                sums[table.name] = (acc.rows, acc.hexdigest())
    finally:
        engine.dispose()
    return sums


def empty_store(url: str) -> None:
    open_store(url).dispose()
