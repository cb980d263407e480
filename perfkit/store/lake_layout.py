"""The Parquet run lake's layout (`lake:///DIR`): where each run's files live, their columns, and
the ids its rows get.

    DIR/spec=<spec hash>/device=<GPU label>/run-<hash of run id>/{runs,points,metrics,kernels}.parquet
    DIR/spec=<spec hash>/device=<GPU label>/compact-<time ns>-<nonce>/{...}.parquet + runs.txt
    DIR/.staging/   files being written (renamed into place whole)
    DIR/.trash/     per-run folders a compaction replaced (removed by a later compaction)

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
TRASH = ".trash"
RUN_PREFIX = "run-"
COMPACT_PREFIX = "compact-"
COVERS_FILE = "runs.txt"  # a compacted folder's per-run folder names, one a line
EXTRA_METRIC_COLUMNS = ("samples", "gpu", "created_epoch", "commit", "methodology")

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
