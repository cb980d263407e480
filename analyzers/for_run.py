"""Analysis tables for a profile run: load the run's traces, analyze, write Parquet.

    from perfkit.analyzers.for_run import write_run_tables
    tables = write_run_tables(run_dir, [run_dir / trace_name(0, "gemm/square/m=128"), ...])
    # {"kernels": "analysis/kernels.parquet", ...}

Each trace is analyzed on its own (one trace per point); the rows of every trace go into one
table per analysis with a first column `trace` (the trace path relative to the run
directory). Every file is written atomically (temp file + rename), and the tables only after
every trace has been analyzed, so a failing trace leaves no partial tables.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from perfkit.analyzers.loaders.trace_files import load_trace_file
from perfkit.analyzers.suite import run_analyses
from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.run_layout import ANALYSIS_DIR, analysis_table


def _relative(path: Path, run_dir: Path) -> str:
    try:
        return path.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return os.path.relpath(path.resolve(), run_dir.resolve())


def analyze_traces(run_dir: Path, trace_paths: Sequence[Path]) -> dict[str, pd.DataFrame]:
    """{analysis: rows of every trace, labelled by column `trace`} (raises TraceError)."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for path in trace_paths:
        tables = run_analyses(load_trace_file(path))
        label = _relative(Path(path), run_dir)
        for name, df in tables.items():
            parts.setdefault(name, []).append(df.assign(trace=label)[["trace", *df.columns]])
    out = {}
    for name, dfs in parts.items():
        filled = [df for df in dfs if not df.empty]  # empty frames carry no dtypes to merge
        out[name] = pd.concat(filled, ignore_index=True) if filled else dfs[0]
    return out


def parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    out = df.copy()
    for col in out.columns:  # text columns (str / None) as Parquet strings
        if out[col].dtype == object and pd.api.types.infer_dtype(out[col], skipna=True) in ("string", "empty"):
            out[col] = out[col].astype("string")
    out.to_parquet(buf, index=False)
    return buf.getvalue()


def write_run_tables(run_dir: Path, trace_paths: list[Path], subdir: str = ANALYSIS_DIR) -> dict[str, str]:
    """Write run_dir/<subdir>/<analysis>.parquet for the traces (Kineto traces or nsys exports);
    return {name: path relative to run_dir}."""
    run_dir = Path(run_dir)
    tables = analyze_traces(run_dir, [Path(p) for p in trace_paths])
    written: dict[str, str] = {}
    for name, df in tables.items():
        rel = analysis_table(name, subdir)
        write_bytes_atomic(run_dir / rel, parquet_bytes(df))
        written[name] = rel
    return written
