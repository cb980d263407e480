"""Tables of the current store schema (SQLAlchemy Core). `migrations` builds them step by step."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_VERSION = 2  # of these tables (perfkit.store.migrations steps up to it)

metadata = MetaData()

schema_info = Table(
    "perfkit_schema",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(128), primary_key=True),
    Column("created", String(40), nullable=False),  # ISO 8601 UTC
    Column("created_epoch", Float, nullable=False),
    Column("commit", String(64)),
    Column("branch", String(255)),
    Column("dirty", Boolean),
    Column("gpu", String(255), nullable=False),  # GPU model, CPU model, or "cpu"
    Column("gpu_driver", String(64)),
    Column("host", String(255)),
    Column("device", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("spec_hash", String(128)),
    Column("spec_path", Text),
    Column("env_json", Text, nullable=False),
    Column("spec_json", Text, nullable=False),
    Column("run_json", Text, nullable=False),  # the record's other top-level fields
    Column("record_schema", Integer, nullable=False),
    Column("source", String(32), nullable=False),  # perfkit | csv | pytest-benchmark | asv | vllm | aiperf | guidellm (v2)
    Column("stored", String(40), nullable=False),  # when it was stored (v2)
)

points = Table(
    "points",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(128), ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("key", Text, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("workload", String(255), nullable=False),
    Column("status", String(16), nullable=False),
    Column("params_json", Text, nullable=False),
    Column("point_json", Text, nullable=False),  # everything but the raw samples
    UniqueConstraint("run_id", "key", name="uq_points_run_key"),
)

metrics = Table(
    "metrics",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(128), ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("point_key", Text),
    Column("name", Text, nullable=False),  # "<point key>:<metric>" or the ingested metric name
    Column("value", Float, nullable=False),  # median of the samples
    Column("unit", String(32), nullable=False),
    Column("direction", String(8), nullable=False),  # lower | higher
    Column("n", Integer, nullable=False),
    UniqueConstraint("run_id", "name", name="uq_metrics_run_name"),
)
Index("ix_metrics_name", metrics.c.name)

samples = Table(
    "samples",
    metadata,
    Column("metric_id", Integer, ForeignKey("metrics.id", ondelete="CASCADE"), primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("value", Float, nullable=False),
)

kernels = Table(  # v2
    "kernels",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(128), ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("point_key", Text),
    Column("name", Text, nullable=False),
    Column("calls", Integer, nullable=False),
    Column("total_ns", Float, nullable=False),
    Column("extra_json", Text, nullable=False),
)
Index("ix_kernels_run", kernels.c.run_id)
Index("ix_runs_gpu_created", runs.c.gpu, runs.c.created_epoch)
