"""The Parquet run lake's layout (`lake:///DIR`): where each run's files live, their columns, and
the ids its rows get.

    DIR/spec=<spec hash>/device=<GPU label>/run-<hash of run id>/{runs,points,metrics,kernels}.parquet
    DIR/spec=<spec hash>/device=<GPU label>/compact-<time ns>-<nonce>/{...}.parquet + runs.txt
    DIR/.staging/   files being written (renamed into place whole)

A partition's live content is its newest compacted folder and the per-run folders that folder's
runs.txt does not name (partition_folders); what a compaction replaced stays beside them, unread,
until a later compaction removes it.

Folder values are percent-encoded (hive style; a missing spec hash is __HIVE_DEFAULT_PARTITION__).
A metric row holds its raw samples as a list (`samples`) and the run's GPU, time and commit, and
is sorted by metric name, GPU, time, commit; every row carries its run id and `methodology` (the
perfkit version and record schema that produced it).

Ids are derived from the run id, never from a sequence: table T's rows of run R get
`base(R, T) + position`, base a 62-bit BLAKE2b of (T, R), so writers on many machines never
coordinate (two runs' id ranges overlap with a probability of about n_runs^2 x rows / 2^62).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from perfkit.store import schema

SCHEME = "lake"
LAKE_OPTION = "perfkit_lake"  # the execution option naming a lake engine's folder
TABLES = ("runs", "points", "metrics", "kernels")
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
STAGING = ".staging"
RUN_PREFIX = "run-"
COMPACT_PREFIX = "compact-"
COVERS_FILE = "runs.txt"  # a compacted folder's per-run folder names, one a line

_ARROW = {"Integer": pa.int64(), "Float": pa.float64(), "Boolean": pa.bool_(), "String": pa.string(),
          "Text": pa.string()}


def is_lake(url: str) -> bool:
    return url.startswith(f"{SCHEME}://")


def lake_dir(url: str) -> Path:
    """The folder of `lake:///DIR` (relative after three slashes, absolute after four, as sqlite:///)."""
    rest = url.split("://", 1)[1].partition("?")[0]
    return Path(rest[1:] if rest.startswith("/") else rest)


def partition(spec_hash: str | None, gpu: str) -> str:
    spec = NULL_PARTITION if not spec_hash else quote(spec_hash, safe="")
    return f"spec={spec}/device={quote(gpu, safe='') or NULL_PARTITION}"


def run_folder(run_id: str) -> str:
    return RUN_PREFIX + hashlib.blake2b(run_id.encode("utf-8"), digest_size=10).hexdigest()


def id_base(run_id: str, table: str) -> int:
    digest = hashlib.blake2b(f"{table}\0{run_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def arrow_schema(table: str) -> pa.Schema:
    """The Parquet columns of `table` in the lake: the store's columns (+ the metric extras)."""
    sql = getattr(schema, table)
    fields = [pa.field(c.name, _ARROW[type(c.type).__name__]) for c in sql.columns]
    if table == "runs":
        fields.append(pa.field("methodology", pa.string()))
    if table == "metrics":
        fields += [pa.field("samples", pa.list_(pa.float64())), pa.field("gpu", pa.string()),
                   pa.field("created_epoch", pa.float64()), pa.field("commit", pa.string()),
                   pa.field("methodology", pa.string())]
    return pa.schema(fields)


def store_columns(table: str) -> list[str]:
    return [c.name for c in getattr(schema, table).columns]


def duckdb_type(field: pa.Field) -> str:
    t = field.type
    if pa.types.is_list(t):
        return "DOUBLE[]"
    return {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}.get(t, "VARCHAR")


def partition_folders(part: Path) -> tuple[Path | None, set[str], list[Path]]:
    """A partition's newest compacted folder, the per-run folder names it covers, and the per-run
    folders it does not (written since)."""
    names = sorted(p.name for p in part.iterdir() if p.is_dir())
    compacts = [n for n in names if n.startswith(COMPACT_PREFIX)]
    newest = part / compacts[-1] if compacts else None
    covered = set((newest / COVERS_FILE).read_text(encoding="utf-8").split()) if newest else set()
    return newest, covered, [part / n for n in names if n.startswith(RUN_PREFIX) and n not in covered]


def parquet_files_sql(folders: list[Path], table: str) -> str:
    """DuckDB's list of `table`'s Parquet files in `folders` (`['a/metrics.parquet', ...]`)."""
    return "[" + ", ".join("'" + str(d / f"{table}.parquet").replace("'", "''") + "'" for d in folders) + "]"
