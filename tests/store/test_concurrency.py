"""Eight processes write to one store at once (its creation included): no row is lost."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from perfkit.store import read
from perfkit.store.api import open_store, store_run
from tests.store.factory import fresh_pg_database, make_run, noisy

pytestmark = pytest.mark.slow

WRITERS = 8
RUNS_EACH = 4
SAMPLES = 20


def _writer(url: str, worker: int, start: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    start.wait()
    for i in range(RUNS_EACH):
        store_run(make_run(f"w{worker}-r{i}", noisy(1e-3, SAMPLES, worker * 100 + i), commit=f"c{worker}{i}"), url)


def _hammer(url: str) -> None:
    ctx = mp.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(url, w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    engine = open_store(url)
    with engine.connect() as conn:
        counts = read.count_rows(conn)
    engine.dispose()
    n = WRITERS * RUNS_EACH
    assert counts["runs"] == n and counts["points"] == n
    assert counts["metrics"] == 3 * n and counts["samples"] == 3 * n * SAMPLES


def test_concurrent_writers_sqlite(sqlite_url: str) -> None:
    _hammer(sqlite_url)  # the store does not exist yet: the 8 writers also race to create it


def test_concurrent_writers_postgres(postgres_url: str) -> None:
    gen = fresh_pg_database(postgres_url, "concurrency")
    url = next(gen)
    try:
        _hammer(url)
    finally:
        gen.close()
