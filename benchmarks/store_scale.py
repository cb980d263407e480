"""The store at scale, SQLite beside DuckDB in one run: N runs x 50 metrics x 10 samples.

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

    python -m benchmarks.store_scale --runs 20000 --out benchmarks/results/store_scale-vm.md
"""

from __future__ import annotations

import argparse
import json
import os
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


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="runs (x 50 metrics x 10 samples each)")
    ap.add_argument("--repeat", type=int, default=3, help="timings per query (the least is kept)")
    ap.add_argument("--dir", type=Path, default=None, help="where the stores are made (a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="query the stores already in --dir (no fill)")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    args = ap.parse_args(argv)
    folder = Path(args.dir or tempfile.mkdtemp(prefix="store_scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    metrics, samples = _tables(args.runs)
    rows = []
    for backend, fill, path in (("SQLite", fill_sqlite, folder / "store.db"),
                                ("DuckDB", fill_duckdb, folder / "store.duckdb")):
        t = time.perf_counter()
        if not (args.reuse and path.exists()):
            path.unlink(missing_ok=True)
            fill(path, args.runs, metrics, samples)
        fill_s = time.perf_counter() - t
        url = f"{'sqlite' if backend == 'SQLite' else 'duckdb'}:///{path}"
        gate_s, made = timed(lambda u=url: gate_query(u), args.repeat)  # type: ignore[misc]
        hist_s, n_hist = timed(lambda u=url: history_query(u), args.repeat)  # type: ignore[misc]
        write_s = write_one(url)
        rows.append((backend, os.path.getsize(path) / 1e6, fill_s, gate_s, made, hist_s, n_hist, write_s))
        print(f"{backend}: filled in {fill_s:.1f} s, gate {gate_s:.3f} s, History {hist_s:.3f} s", flush=True)
    n_samples = samples.num_rows
    lines = [f"# Store at scale: SQLite and DuckDB (`benchmarks/store_scale.py --runs {args.runs}`)", "",
             f"{args.runs:,} runs x {METRICS_PER_RUN} metrics x {SAMPLES} samples = {n_samples:,} sample rows "
             f"({metrics.num_rows:,} metric rows; {GATE_NAMES:,} metric names over {SPECS} specs). Cold: a "
             "fresh engine per timing (the OS file cache warm); the least of "
             f"{args.repeat}. Gate: {GATE_NAMES:,} metrics, each name's newest {HISTORY_RUNS} runs, read and "
             "summarised; History: one metric over all its runs, run locations computed.", "",
             "| backend | file MB | bulk fill s | gate (1,000 metrics) s | summaries | History page s | "
             "History runs | one run written s |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {b} | {mb:.0f} | {f:.1f} | {g:.3f} | {m:,} | {h:.3f} | {nh:,} | {w:.3f} |"
              for b, mb, f, g, m, h, nh, w in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
