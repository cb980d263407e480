"""`perfkit store compact --db lake:///DIR`: per partition, the newest compacted folder and the
per-run folders it does not cover merged into one new compacted folder (one sorted Parquet file
per table), so a lake of 200,000 runs is read from a few files, not 800,000.

Metric rows are sorted by name, GPU, time and commit within recency tiers (a partition's newest
256 runs last, the 3,840 before them ahead of those, the rest first), in row groups of 16,384
rows: a read of one name (the History page) skips the row groups of other names, a read of the
newest runs (the gate) the row groups of older tiers, by the files' min/max statistics.

Atomic for readers: the new folder is written under DIR/.staging and renamed into its partition
in one step, with `runs.txt` naming every per-run folder it covers; a reader takes a partition's
newest compacted folder and the per-run folders it does not cover (perfkit.store.lake_read), so
it sees each run once, before or after, never half. What a compaction replaced stays in place
(ignored by readers) until a later compaction at least `grace_s` after it removes it, so a
reader that listed the files just before can still open them. One compaction at a time (a lock
file); writers go on meanwhile (a run written during it stays a per-run folder, still live).
"""

from __future__ import annotations

import fcntl
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.core.errors import StoreError
from perfkit.store.lake_layout import (
    COMPACT_PREFIX,
    COVERS_FILE,
    STAGING,
    TABLES,
    arrow_schema,
    parquet_files_sql,
    partition_folders,
)
from perfkit.store.lake_write import sync_folder

LOCK_FILE = ".compact.lock"
GRACE_S = 600.0
ORDER = {"runs": '"created_epoch", "run_id"', "points": '"run_id", "position"',
         "metrics": '"name", "gpu", "created_epoch", "commit", "run_id"', "kernels": '"run_id", "id"'}
ROW_GROUP_ROWS = 16_384  # a tier's rows in few groups: small footers, and reads skip the other tiers


TIER_RUNS = (256, 4096)  # a partition's newest runs, then the next ones: row groups of their own


def tier_sql(age: str) -> str:
    """The recency tier (0: the newest TIER_RUNS[0] runs, ...) of a run whose rank from the newest is `age` (1..)."""
    cases = " ".join(f"WHEN {age} <= {n} THEN {i}" for i, n in enumerate(TIER_RUNS))
    return f"CASE {cases} ELSE {len(TIER_RUNS)} END"


@dataclass(frozen=True)
class CompactResult:
    partitions: int  # partitions compacted
    folders_merged: int  # folders read (per-run and earlier compacted)
    folders_removed: int  # replaced folders removed (older than grace_s)


def compact_lake(folder: Path, grace_s: float = GRACE_S) -> CompactResult:
    """Compact every partition of the lake at `folder` that has more than one live folder."""
    if not folder.is_dir():
        raise StoreError(f"{folder}: no lake there; pass the lake's --db lake:///DIR")
    import duckdb

    with open(folder / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        con = duckdb.connect()
        try:
            parts = merged = removed = 0
            for part in sorted(folder.glob("spec=*/device=*")):
                removed += _remove_replaced(part, grace_s)
                n = _compact_partition(con, folder, part)
                parts += n > 0
                merged += n
            return CompactResult(parts, merged, removed)
        finally:
            con.close()


def _compact_partition(con: Any, folder: Path, part: Path) -> int:
    newest, covered, runs = partition_folders(part)
    sources = ([newest] if newest else []) + runs
    if not runs:  # nothing new since the last compaction
        return 0
    staging = folder / STAGING / f"compact-{secrets.token_hex(6)}"
    staging.mkdir(parents=True)
    try:
        def files(table: str) -> str:
            return parquet_files_sql(sources, table)

        for table in TABLES:
            cols = ", ".join(f'"{f.name}"' for f in arrow_schema(table))
            rows = f"SELECT {cols} FROM read_parquet({files(table)}, hive_partitioning = false)"
            order = ORDER[table]
            if table == "metrics":  # oldest tier first, then by name, GPU, time, commit within a tier
                ages = (f"SELECT run_id AS age_run, row_number() OVER (ORDER BY created_epoch DESC, run_id DESC) "
                        f"AS age FROM read_parquet({files('runs')}, hive_partitioning = false)")
                rows = f"SELECT {cols}, {tier_sql('age')} AS tier FROM ({rows}) JOIN ({ages}) ON run_id = age_run"
                rows, order = f"SELECT {cols} FROM ({rows}) ORDER BY tier DESC, {order}", ""
            out = str(staging / f"{table}.parquet").replace("'", "''")
            con.execute(f"COPY ({rows}{f' ORDER BY {order}' if order else ''}) TO '{out}' "
                        f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})")
        (staging / COVERS_FILE).write_text("".join(f"{n}\n" for n in sorted(covered | {r.name for r in runs})),
                                           encoding="utf-8")
        sync_folder(staging)
        target = part / f"{COMPACT_PREFIX}{time.time_ns():020d}-{secrets.token_hex(4)}"
        staging.rename(target)
        sync_folder(part)
        return len(sources)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_replaced(part: Path, grace_s: float) -> int:
    """Remove the folders the newest compacted folder replaced, once it is older than grace_s."""
    newest, covered, _ = partition_folders(part)
    if newest is None:
        return 0
    made_ns = int(newest.name[len(COMPACT_PREFIX):].split("-", 1)[0])
    if time.time_ns() - made_ns < grace_s * 1e9:
        return 0
    gone = [p for p in part.iterdir() if p.is_dir() and p != newest
            and (p.name.startswith(COMPACT_PREFIX) or p.name in covered)]
    for p in gone:
        shutil.rmtree(p)
    return len(gone)
