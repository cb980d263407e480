"""An export's rows (perfkit.store.import_) written into a Parquet lake: per partition one folder
of the imported runs (named like a per-run folder, so readers and `perfkit store compact` treat
it as one), metric rows with their samples as lists, the export's ids kept (shifted past the
lake's own when they would meet them, as on every backend). Each folder appears whole (written
under .staging, renamed); `remove_import` takes them away again when the read-back differs.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from perfkit.core.version import __version__
from perfkit.store.lake_layout import RUN_PREFIX, STAGING, TABLES, arrow_schema, partition
from perfkit.store.lake_write import sync_folder, write_parquet


def imported_tables(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The imported rows (table -> insert parameters, as import_ made them) as a lake (or a
    ClickHouse store) keeps them: runs and metric rows with `methodology`, metric rows with their
    samples as a list and their run's GPU, time and commit; no samples table."""
    runs = {str(r["run_id"]): r for r in rows.get("runs", [])}
    samples: dict[int, list[tuple[int, float]]] = {}
    for s in rows.get("samples", []):
        samples.setdefault(int(s["metric_id"]), []).append((int(s["idx"]), float(s["value"])))
    method = f"imported by perfkit {__version__}"
    out: dict[str, list[dict[str, Any]]] = {
        "runs": [{**run, "methodology": method} for run in runs.values()],
        "points": list(rows.get("points", [])), "kernels": list(rows.get("kernels", [])), "metrics": []}
    for row in rows.get("metrics", []):
        run = runs[str(row["run_id"])]
        values = [v for _, v in sorted(samples.get(int(row["id"]), []))]
        out["metrics"].append({**row, "samples": values, "gpu": run["gpu"], "created_epoch": run["created_epoch"],
                               "commit": run["commit"], "methodology": method})
    return out


def write_import(folder: Path, rows: dict[str, list[dict[str, Any]]]) -> list[Path]:
    """Write the imported rows (table -> insert parameters, as import_ made them); the folders made."""
    tables = imported_tables(rows)
    runs = {str(r["run_id"]): r for r in tables["runs"]}
    parts: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for table in TABLES:
        for row in tables[table]:
            run = runs[str(row["run_id"])]
            part = parts.setdefault(partition(run["spec_hash"], str(run["gpu"])), {t: [] for t in TABLES})
            part[table].append(row)
    made: list[Path] = []
    try:
        for name, part_tables in sorted(parts.items()):
            made.append(_write_folder(folder, name, part_tables))
    except BaseException:
        remove_import(made)
        raise
    return made


def _write_folder(folder: Path, part: str, tables: dict[str, list[dict[str, Any]]]) -> Path:
    name = f"{RUN_PREFIX}import-{secrets.token_hex(8)}"
    staging = folder / STAGING / name
    staging.mkdir(parents=True)
    try:
        tables["metrics"].sort(key=lambda r: (str(r["name"]), str(r["gpu"]), float(r["created_epoch"]),
                                              str(r["commit"]), str(r["run_id"])))
        for table in TABLES:
            write_parquet(pa.Table.from_pylist(tables[table], schema=arrow_schema(table)),
                          staging / f"{table}.parquet")
        sync_folder(staging)
        target = folder / part / name
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)
        sync_folder(target.parent)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def remove_import(folders: Sequence[Path]) -> None:
    for f in folders:
        shutil.rmtree(f, ignore_errors=True)
