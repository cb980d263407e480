"""`StoredRun`: what one row of `runs` and its children hold, built from a perfkit Run or from
another tool's results (CSV, pytest-benchmark)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfkit.core.codec import to_builtins
from perfkit.core.env import Env
from perfkit.core.errors import StoreError
from perfkit.core.migrate import SCHEMA_VERSION
from perfkit.core.record import Run
from perfkit.core.run_layout import RunDir
from perfkit.store.metrics import MetricRecord, run_metrics

SOURCE_PERFKIT = "perfkit"
SOURCE_CSV = "csv"
SOURCE_PYTEST_BENCHMARK = "pytest-benchmark"


@dataclass(frozen=True)
class PointRow:
    key: str
    kind: str
    workload: str
    status: str
    params: dict[str, Any]
    point: dict[str, Any]  # the point's JSON form without the raw samples kept as a metric


@dataclass(frozen=True)
class KernelRow:
    point_key: str | None
    name: str
    calls: int
    total_ns: float
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredRun:
    run_id: str
    created: str  # ISO 8601 UTC
    gpu: str
    device: str
    status: str
    source: str
    env: Env
    metrics: tuple[MetricRecord, ...]
    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None
    gpu_driver: str | None = None
    host: str | None = None
    spec_hash: str | None = None
    spec_path: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other top-level run.json fields
    record_schema: int = SCHEMA_VERSION  # of the run record (the env's shape)
    points: tuple[PointRow, ...] = ()
    kernels: tuple[KernelRow, ...] = ()

    @property
    def created_epoch(self) -> float:
        return parse_time(self.created).timestamp()


def parse_time(value: str) -> datetime:
    """An ISO 8601 time (naive means UTC) or a Unix timestamp in seconds."""
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):  # 1e20, inf, nan: not a time
            raise ValueError(f"Unix time {text} is out of range") from None
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def iso_utc(value: str | datetime) -> str:
    dt = value if isinstance(value, datetime) else parse_time(value)
    return dt.astimezone(timezone.utc).isoformat()


def from_run(run: Run, run_dir: Path | None = None) -> StoredRun:
    """The stored form of a perfkit Run (run_dir: where relative artifact paths point). Its source
    is "perfkit", or the tool a run made from another tool's file came from (`env.source`)."""
    git = run.env.git
    metrics = tuple(run_metrics(run))
    with_time = {m.point_key for m in metrics if m.name.endswith(":time_s")}
    points = []
    for p in run.points:
        d = to_builtins(p)
        if p.key in with_time and d.get("measurement"):
            d["measurement"] = {k: v for k, v in d["measurement"].items() if k != "samples_s"}
            d["measurement"]["samples_in_metric"] = f"{p.key}:time_s"
        points.append(PointRow(p.key, p.kind, p.workload, p.status, dict(p.params), d))
    # the record's top-level fields without a column of their own
    artifacts = run.artifacts
    if run_dir is not None:  # where the run directory (traces, analysis tables) lived when stored
        artifacts = replace(artifacts, stored_from=str(Path(run_dir).resolve()))
    rest: dict[str, Any] = {"finished": run.finished, "summary": run.counts, "artifacts": to_builtins(artifacts),
                            "created_raw": run.created}
    try:
        created = iso_utc(run.created)
    except ValueError:
        raise StoreError(f"run {run.run_id}: created {run.created!r} is not an ISO 8601 time; "
                         "fix the run record") from None
    return StoredRun(
        run_id=run.run_id,
        created=created,
        gpu=run.env.label,
        device=run.device,
        status=run.status,
        source=run.env.source.format if run.env.source is not None else SOURCE_PERFKIT,
        env=run.env,
        metrics=metrics,
        commit=git.commit,
        branch=git.branch,
        dirty=git.dirty,
        gpu_driver=run.env.driver,
        host=run.env.host,
        spec_hash=run.spec_hash,
        spec_path=run.spec_path,
        spec=run.spec,
        extra=rest,
        record_schema=run.schema_version,
        points=tuple(points),
        kernels=tuple(kernel_rows(run, run_dir)),
    )


def inside_run_dir(run_dir: Path, relative: str, what: str) -> Path:
    """run_dir / relative, refused when it resolves outside the run directory (`../x`, `/etc/x`,
    a symbolic link out): a run record never makes the store read files elsewhere."""
    root = run_dir.resolve()
    path = (run_dir / relative).resolve()
    if path != root and root not in path.parents:
        raise StoreError(f"{RunDir(run_dir).run_json}: {what} '{relative}' points outside the run directory; "
                         "artifacts resolve inside it only: fix or remove that entry")
    return path


def kernel_rows(run: Run, run_dir: Path | None) -> list[KernelRow]:
    """Kernel tables listed in run.artifacts.kernels: rows inline, or a .json/.csv file
    (relative to the run directory) of rows with name, calls, total_ns and optional point."""
    spec = run.artifacts.kernels
    if spec is None:
        analysis = run.artifacts.analysis.get("kernels")
        if not analysis or run_dir is None:
            return []
        return _analysis_kernel_rows(run, inside_run_dir(run_dir, str(analysis), "artifacts.analysis.kernels"))
    rows: Any = spec
    if isinstance(spec, str):
        if run_dir is None:
            return []
        path = inside_run_dir(run_dir, spec, "artifacts.kernels")
        try:
            text = path.read_text()
        except OSError as exc:
            raise StoreError(f"{path}: kernel table listed in run.json cannot be read ({exc.strerror}); "
                             "re-run the profile or remove artifacts.kernels") from None
        rows = json.loads(text) if path.suffix == ".json" else list(csv.DictReader(io.StringIO(text)))
    if not isinstance(rows, list):
        raise StoreError(f"run {run.run_id}: artifacts.kernels must be a list of rows or a file name")
    out = []
    for i, row in enumerate(rows):
        try:
            name = str(row["name"])
            calls = int(float(row.get("calls", row.get("count", 0))))
            total = float(row.get("total_ns", row.get("total_dur_ns", 0.0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"run {run.run_id}: kernel row {i} is malformed ({exc!r}); "
                             "rows need name, calls, total_ns") from None
        point = row.get("point") or row.get("point_key")
        extra = {k: v for k, v in row.items()
                 if k not in ("name", "calls", "count", "total_ns", "total_dur_ns", "point", "point_key")}
        out.append(KernelRow(str(point) if point else None, name, calls, total, extra))
    return out


def _analysis_kernel_rows(run: Run, path: Path) -> list[KernelRow]:
    """Rows of the kernel summary `perfkit profile` wrote (analysis/kernels.parquet), each
    attributed to the point whose trace it came from."""
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: kernel table listed in run.json cannot be read ({exc}); "
                         "re-run the profile or `perfkit analyze` its traces") from None
    point_of_trace = {p.trace: p.key for p in run.points if p.trace}
    out = []
    for row in df.to_dict(orient="records"):
        extra = {str(k): v for k, v in row.items() if k not in ("name", "count", "total_ns", "trace") and pd.notna(v)}
        out.append(KernelRow(point_of_trace.get(str(row.get("trace"))), str(row["name"]), int(row["count"]),
                             float(row["total_ns"]), extra))
    return out
