"""The store at scale, SQLite beside DuckDB, the Parquet lake and embedded ClickHouse in one run: N runs x 50 metrics x 10 samples.

Both stores are created by perfkit (open_store: the same schema) and filled in bulk with the
same rows (the fill is not what is timed; one run written through perfkit's own write path is,
per backend). The runs are spread round-robin over 20 specs of 50 metric names each (1,000
names), one GPU, branch main, one commit per run. Timed per backend, each with a fresh engine
(cold: a new connection, the database's own caches empty; the OS file cache is left as it is):

- gate: the gate's bulk history read for 1,000 metrics, each name's newest 30 runs
  (perfkit.store.bulk_history: the newest runs holding the names, then each name's newest 30
  values and samples picked in SQL) and the gate's summaries of them
  (perfkit.comparison.gate_history.summaries);
- history: the History page's read of one metric over every run that holds it
  (perfkit.comparison.history_frame.history_frame: the run locations included).

The lake (`lake:///DIR`) is filled directly as `perfkit store compact` leaves it (one sorted
file per spec, made by DuckDB from generate_series), with its own run count (--lake-runs).

    python -m benchmarks.store_scale --runs 20000 --lake-runs 200000 --repeat 2 \\
        --out benchmarks/results/store_scale-vm.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from perfkit.comparison.gate_history import HISTORY_RUNS, summaries
from perfkit.comparison.history_frame import history_frame
from perfkit.store.api import open_store
from perfkit.store.bulk_history import metric_values, recent_runs_with
from perfkit.store.records import from_run
from perfkit.store.write import write_run

METRICS_PER_RUN = 50
SAMPLES = 10
SPECS = 20
GPU = "NVIDIA H100 80GB HBM3"
T0 = 1.7e9
GATE_NAMES = METRICS_PER_RUN * SPECS


def names_of(spec: int) -> list[str]:
    return [f"spec{spec:02d}/gemm/m={i}:time_s" for i in range(METRICS_PER_RUN)]


def _runs_rows(n_runs: int) -> list[dict[str, Any]]:
    return [{"run_id": f"run{i:07d}", "created": "2026-01-01T00:00:00+00:00", "created_epoch": T0 + 60.0 * i,
             "commit": f"{i:040x}", "branch": "main", "dirty": False, "gpu": GPU, "gpu_driver": "550",
             "host": "box", "device": "cuda", "status": "complete", "spec_hash": f"h{i % SPECS}",
             "spec_path": "model.yaml", "env_json": "{}", "spec_json": json.dumps({"name": f"spec{i % SPECS:02d}"}),
             "run_json": "{}", "record_schema": 1, "source": "perfkit", "stored": "2026-01-01T00:00:00+00:00"}
            for i in range(n_runs)]


def _tables(n_runs: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    """metrics and samples rows (ids from 1) as Arrow tables."""
    rng = np.random.default_rng(seed)
    n_metrics = n_runs * METRICS_PER_RUN
    run_index = np.repeat(np.arange(n_runs), METRICS_PER_RUN)
    local = np.tile(np.arange(METRICS_PER_RUN), n_runs)
    base = 1e-3 * (1 + local)
    samples = base[:, None] * np.exp(rng.normal(0, 0.02, (n_metrics, SAMPLES)))
    ids = np.arange(1, n_metrics + 1, dtype=np.int64)
    names = [f"spec{r % SPECS:02d}/gemm/m={j}:time_s" for r, j in zip(run_index.tolist(), local.tolist(), strict=True)]
    metrics = pa.table({"id": ids, "run_id": [f"run{r:07d}" for r in run_index.tolist()],
                        "point_key": [n.rsplit(":", 1)[0] for n in names], "name": names,
                        "value": np.median(samples, axis=1), "unit": ["s"] * n_metrics,
                        "direction": ["lower"] * n_metrics, "n": np.full(n_metrics, SAMPLES, dtype=np.int64)})
    sample_rows = pa.table({"metric_id": np.repeat(ids, SAMPLES), "idx": np.tile(np.arange(SAMPLES), n_metrics),
                            "value": samples.ravel()})
    return metrics, sample_rows


def fill_sqlite(path: Path, n_runs: int, metrics: pa.Table, samples: pa.Table) -> None:
    open_store(f"sqlite:///{path}").dispose()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    with con:
        _insert_runs(con, n_runs)
        cols = ", ".join(metrics.column_names)
        con.executemany(f"INSERT INTO metrics ({cols}) VALUES ({', '.join('?' * metrics.num_columns)})",
                        zip(*(c.to_pylist() for c in metrics.columns), strict=True))
        for start in range(0, samples.num_rows, 1_000_000):
            part = samples.slice(start, 1_000_000)
            con.executemany("INSERT INTO samples (metric_id, idx, value) VALUES (?, ?, ?)",
                            zip(*(c.to_pylist() for c in part.columns), strict=True))
    con.close()


def _insert_runs(con: Any, n_runs: int) -> None:
    rows = _runs_rows(n_runs)
    cols = list(rows[0])
    quoted = ", ".join(f'"{c}"' for c in cols)
    con.executemany(f"INSERT INTO runs ({quoted}) VALUES ({', '.join('?' * len(cols))})",
                    [tuple(r[c] for c in cols) for r in rows])


def fill_duckdb(path: Path, n_runs: int, metrics: pa.Table, samples: pa.Table) -> None:
    import duckdb

    open_store(f"duckdb:///{path}").dispose()
    con = duckdb.connect(str(path))
    con.execute("BEGIN")
    runs = pa.Table.from_pylist(_runs_rows(n_runs))
    con.register("runs_in", runs)
    con.execute(f"INSERT INTO runs ({', '.join(chr(34) + c + chr(34) for c in runs.column_names)}) "
                "SELECT * FROM runs_in")
    con.register("metrics_in", metrics)
    con.execute(f"INSERT INTO metrics ({', '.join(metrics.column_names)}) SELECT * FROM metrics_in")
    con.register("samples_in", samples)
    con.execute("INSERT INTO samples (metric_id, idx, value) SELECT * FROM samples_in")
    last = metrics.num_rows  # the id sequence goes on past the ids written
    con.execute(f"SELECT count(nextval('metrics_id_seq')) FROM range({last})")
    con.execute("COMMIT")
    con.execute("CHECKPOINT")
    con.close()


def fill_clickhouse(path: Path, n_runs: int, metrics: pa.Table, samples: pa.Table) -> None:
    """An embedded ClickHouse store (perfkit.store.clickhouse_schema) with the same rows: runs and
    metric rows (samples as arrays, one writer) loaded from Parquet files by ClickHouse itself."""
    import pyarrow.parquet as pq

    from perfkit.store.clickhouse_schema import all_columns

    engine = open_store(f"clickhouse:///{path}")
    n_metrics = metrics.num_rows
    run_of = np.repeat(np.arange(n_runs), METRICS_PER_RUN)
    extra = {"methodology": ["bench"] * n_metrics, "writer": ["w"] * n_metrics}
    metrics_all = metrics.append_column("samples", pa.FixedSizeListArray.from_arrays(
        pa.array(samples.column("value").to_numpy()), SAMPLES).cast(pa.list_(pa.float64())))
    metrics_all = metrics_all.append_column("gpu", pa.array([GPU] * n_metrics))
    metrics_all = metrics_all.append_column("created_epoch", pa.array(T0 + 60.0 * run_of))
    metrics_all = metrics_all.append_column("commit", pa.array([f"{i:040x}" for i in run_of.tolist()]))
    for name, values in extra.items():
        metrics_all = metrics_all.append_column(name, pa.array(values))
    runs_all = pa.Table.from_pylist([{**r, "methodology": "bench", "writer": "w", "written_ns": 0}
                                     for r in _runs_rows(n_runs)])
    with tempfile.TemporaryDirectory() as tmp, engine.connect() as conn:
        for table, data in (("runs", runs_all), ("metrics", metrics_all)):
            file = Path(tmp) / f"{table}.parquet"
            pq.write_table(data, file)
            names = ", ".join(f'"{n}"' for n, _ in all_columns(table))
            conn.exec_driver_sql(f"INSERT INTO {table}_all ({names}) SELECT {names} FROM file('{file}', Parquet)")
    engine.dispose()


def fill_lake(folder: Path, n_runs: int) -> None:
    """The lake as `perfkit store compact` leaves it: per spec, one compacted folder whose metric
    rows (with their samples as lists) are sorted by recency tier, name, GPU, time, commit; made by DuckDB from
    generate_series (samples log-normal, 2% spread, as _tables; the stored value their median)."""
    import duckdb

    from perfkit.store.lake_compact import ROW_GROUP_ROWS, tier_sql
    from perfkit.store.lake_layout import (
        COMPACT_PREFIX,
        COVERS_FILE,
        arrow_schema,
        id_base,
        partition,
    )

    runs_cols = ", ".join(f'"{f.name}"' for f in arrow_schema("runs"))
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    for spec in range(SPECS):
        out = folder / partition(f"h{spec}", GPU) / f"{COMPACT_PREFIX}{0:020d}-fill"
        out.mkdir(parents=True)
        (out / COVERS_FILE).write_text("", encoding="utf-8")
        runs = pa.Table.from_pylist([{**r, "methodology": "perfkit; record schema 1"}
                                     for r in _runs_rows(n_runs)[spec::SPECS]], schema=arrow_schema("runs"))
        con.register("runs_in", runs)
        con.execute(f"COPY (SELECT {runs_cols} FROM runs_in) TO '{out}/runs.parquet' (FORMAT parquet, COMPRESSION zstd)")
        con.unregister("runs_in")
        for table in ("points", "kernels"):
            pa_empty = arrow_schema(table).empty_table()
            con.register("empty_in", pa_empty)
            con.execute(f"COPY (SELECT * FROM empty_in) TO '{out}/{table}.parquet' (FORMAT parquet)")
            con.unregister("empty_in")
        base = id_base(f"fill{spec}", "metrics")
        newest = spec + SPECS * ((n_runs - 1 - spec) // SPECS)  # the partition's newest run
        con.execute(f"""COPY (
            WITH m AS (
                SELECT r.i AS i, j.j AS j, r.i * {METRICS_PER_RUN} + j.j AS k,
                       list_transform(range({SAMPLES}), lambda x: 1e-3 * (1 + j.j) * exp(0.02 * sqrt(-2 * ln(1 - random()))
                                      * cos(2 * pi() * random()))) AS samples
                FROM range({spec}, {n_runs}, {SPECS}) r(i), range({METRICS_PER_RUN}) j(j))
            SELECT {base} + k AS id, printf('run%07d', i) AS run_id, printf('spec%02d/gemm/m=%d', {spec}, j) AS point_key,
                   printf('spec%02d/gemm/m=%d:time_s', {spec}, j) AS name, list_median(samples) AS value,
                   's' AS unit, 'lower' AS direction, {SAMPLES}::BIGINT AS n, samples, '{GPU}' AS gpu,
                   {T0} + 60.0 * i AS created_epoch, printf('%040x', i) AS "commit",
                   'perfkit; record schema 1' AS methodology
            FROM m ORDER BY {tier_sql(f"(({newest} - i) // {SPECS}) + 1")} DESC, name, gpu, created_epoch, "commit"
        ) TO '{out}/metrics.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})""")
    con.close()


def _folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any, float]:
    """The least wall time of `repeat` calls, the last result, and the CPU seconds (this process,
    every thread) of the fastest call: on a shared machine the CPU time is the steadier number."""
    best, out, cpu = float("inf"), None, float("nan")
    for _ in range(repeat):
        t, c = time.perf_counter(), _cpu_s()
        out = fn()
        wall, used = time.perf_counter() - t, _cpu_s() - c
        if wall < best:
            best, cpu = wall, used
    return best, out, cpu


def _cpu_s() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def gate_query(url: str) -> int:
    """The 1,000-metric gate read and summaries on a fresh engine; returns the summaries made."""
    engine = open_store(url)
    try:
        names = [n for spec in range(SPECS) for n in names_of(spec)]
        probe = [names_of(spec)[0] for spec in range(SPECS)]
        with engine.connect() as conn:
            runs = recent_runs_with(conn, GPU, probe, exclude="", limit=HISTORY_RUNS * SPECS)
            rows = metric_values(conn, names, list(runs), newest=HISTORY_RUNS)
        return sum(len(summaries(rows.get(n, []), runs, HISTORY_RUNS)) for n in names)
    finally:
        engine.dispose()


def history_query(url: str) -> int:
    engine = open_store(url)
    try:
        with engine.connect() as conn:
            return len(history_frame(conn, names_of(0)[0], [GPU], None))
    finally:
        engine.dispose()


def write_one(url: str) -> float:
    """Seconds to store one run of 50 metrics x 10 samples through perfkit's write path."""
    from tests.store.factory import gemm_point, make_run

    points = [gemm_point([1e-3] * SAMPLES, key=f"probe/gemm/m={i}") for i in range(METRICS_PER_RUN // 3)]
    stored = from_run(make_run(f"probe{time.time_ns()}", points=points), None)
    engine = open_store(url)
    try:
        t = time.perf_counter()
        write_run(engine, stored)
        return time.perf_counter() - t
    finally:
        engine.dispose()


BACKENDS = ("SQLite", "DuckDB", "lake", "ClickHouse")


def _url(backend: str, path: Path) -> str:
    return {"SQLite": "sqlite", "DuckDB": "duckdb", "lake": "lake", "ClickHouse": "clickhouse"}[backend] + f":///{path}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="runs in SQLite and DuckDB (x 50 metrics x 10 samples)")
    ap.add_argument("--lake-runs", type=int, default=None, help="runs in the Parquet lake (default: --runs)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help=f"which of {','.join(BACKENDS)} (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="timings per query (the least is kept)")
    ap.add_argument("--dir", type=Path, default=None, help="where the stores are made (a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="query the stores already in --dir (no fill)")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    args = ap.parse_args(argv)
    lake_runs = args.lake_runs or args.runs
    folder = Path(args.dir or tempfile.mkdtemp(prefix="store_scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    tables = _tables(args.runs) if {"SQLite", "DuckDB", "ClickHouse"} & set(wanted) else None
    rows = []
    fills = {"SQLite": fill_sqlite, "DuckDB": fill_duckdb, "ClickHouse": fill_clickhouse}
    for backend, path in (("SQLite", folder / "store.db"), ("DuckDB", folder / "store.duckdb"),
                          ("lake", folder / "lake"), ("ClickHouse", folder / "clickhouse")):
        if backend not in wanted:
            continue
        n_runs = lake_runs if backend == "lake" else args.runs
        t = time.perf_counter()
        if not (args.reuse and path.exists()):
            if path.is_dir():
                shutil.rmtree(path)
            path.unlink(missing_ok=True)
            if backend == "lake":
                fill_lake(path, n_runs)
            else:
                assert tables is not None
                fills[backend](path, n_runs, *tables)
        fill_s = time.perf_counter() - t
        url = _url(backend, path)
        gate_s, made, gate_cpu = timed(lambda u=url: gate_query(u), args.repeat)  # type: ignore[misc]
        hist_s, n_hist, hist_cpu = timed(lambda u=url: history_query(u), args.repeat)  # type: ignore[misc]
        write_s = write_one(url)
        size_mb = _folder_mb(path) if path.is_dir() else os.path.getsize(path) / 1e6
        rows.append((backend, n_runs * METRICS_PER_RUN * SAMPLES, size_mb, fill_s, gate_s, made, hist_s, n_hist,
                     write_s, gate_cpu, hist_cpu))
        print(f"{backend}: filled in {fill_s:.1f} s, gate {gate_s:.3f} s, History {hist_s:.3f} s", flush=True)
    lines = [f"# Store at scale: SQLite, DuckDB, the Parquet lake, ClickHouse (`benchmarks/store_scale.py --runs {args.runs} "
             f"--lake-runs {lake_runs}`)", "",
             f"Runs x {METRICS_PER_RUN} metrics x {SAMPLES} samples ({GATE_NAMES:,} metric names over {SPECS} specs, "
             "one GPU). Cold: a fresh engine per timing (the OS file cache warm); the least of "
             f"{args.repeat}. Gate: {GATE_NAMES:,} metrics, each name's newest {HISTORY_RUNS} runs, read and "
             "summarised; History: one metric over all its runs, run locations computed.", "",
             "| backend | sample rows | size MB | bulk fill s | gate (1,000 metrics) s | summaries | History page s | "
             "History runs | one run written s | gate CPU s | History CPU s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {b} | {n:,} | {mb:.0f} | {f:.1f} | {g:.3f} | {m:,} | {h:.3f} | {nh:,} | {w:.3f} | {gc:.3f} | {hc:.3f} |"
              for b, n, mb, f, g, m, h, nh, w, gc, hc in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
