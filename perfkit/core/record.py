"""The versioned run record (`run.json`): one `Run` with its `PointResult`s.

This is the contract between the profiler (writer) and the store, gate, reports, roofline
and dashboard (readers). Readers call `load_run`, which migrates older schema versions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfkit.core.cost import Cost
from perfkit.core.errors import StoreError
from perfkit.core.measurement import Measurement

SCHEMA_VERSION = 1
RUN_FILE = "run.json"
PARTIAL_FILE = "run.partial.json"

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_SKIPPED = "skipped"

RUN_COMPLETE = "complete"
RUN_INTERRUPTED = "interrupted"
RUN_RUNNING = "running"


@dataclass(frozen=True)
class Numerics:
    """Result of comparing a point's output with a higher-precision reference."""

    reference: str  # e.g. "float64 torch.matmul"
    rel_err: float  # ||out - ref|| / ||ref|| (Frobenius)
    max_abs_err: float
    tol: float
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "rel_err": self.rel_err,
            "max_abs_err": self.max_abs_err,
            "tol": self.tol,
            "ok": self.ok,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Numerics:
        return cls(
            reference=str(data["reference"]),
            rel_err=float(data["rel_err"]),
            max_abs_err=float(data["max_abs_err"]),
            tol=float(data["tol"]),
            ok=bool(data["ok"]),
        )


@dataclass(frozen=True)
class PointResult:
    """One point of a sweep: what ran, how long it took, what it cost, whether it was right."""

    key: str  # stable identity across runs: "kind/name/param=value,..."
    kind: str
    workload: str
    params: dict[str, Any]
    status: str  # ok | failed | skipped
    error: str | None = None
    measurement: Measurement | None = None
    cost: Cost | None = None
    numerics: Numerics | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # workload-specific extras (TTFT, ...)
    trace: str | None = None  # path relative to the run directory

    @property
    def median_s(self) -> float | None:
        return self.measurement.median_s if self.measurement and self.measurement.samples_s else None

    @property
    def achieved(self) -> dict[str, float]:
        med = self.median_s
        if self.cost is None or not med:
            return {}
        return {"flop_per_s": self.cost.flop / med, "bytes_per_s": self.cost.bytes / med}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "kind": self.kind,
            "workload": self.workload,
            "params": self.params,
            "status": self.status,
            "error": self.error,
            "measurement": self.measurement.to_dict() if self.measurement else None,
            "cost": self.cost.to_dict() if self.cost else None,
            "achieved": self.achieved,
            "numerics": self.numerics.to_dict() if self.numerics else None,
            "metrics": self.metrics,
            "trace": self.trace,
        }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PointResult:
        m = data.get("measurement")
        c = data.get("cost")
        nm = data.get("numerics")
        return cls(
            key=str(data["key"]),
            kind=str(data["kind"]),
            workload=str(data["workload"]),
            params=dict(data.get("params", {})),
            status=str(data["status"]),
            error=data.get("error"),
            measurement=Measurement.from_dict(m) if m else None,
            cost=Cost.from_dict(c) if c else None,
            numerics=Numerics.from_dict(nm) if nm else None,
            metrics=dict(data.get("metrics") or {}),
            trace=data.get("trace"),
        )


@dataclass(frozen=True)
class Run:
    run_id: str
    created: str  # ISO 8601 UTC
    status: str  # complete | interrupted | running
    spec: dict[str, Any]
    spec_hash: str
    spec_path: str
    device: str  # "cpu" | "cuda"
    env: dict[str, Any]
    points: tuple[PointResult, ...] = ()
    finished: str | None = None
    artifacts: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def counts(self) -> dict[str, int]:
        out = {STATUS_OK: 0, STATUS_FAILED: 0, STATUS_SKIPPED: 0}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    @property
    def commit(self) -> str | None:
        return (self.env.get("git") or {}).get("commit")

    def with_points(self, points: tuple[PointResult, ...]) -> Run:
        return replace(self, points=points)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "created": self.created,
            "finished": self.finished,
            "status": self.status,
            "device": self.device,
            "spec_path": self.spec_path,
            "spec_hash": self.spec_hash,
            "spec": self.spec,
            "env": self.env,
            "summary": self.counts,
            "artifacts": self.artifacts,
            "points": [p.to_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        data = migrate(data)
        return cls(
            run_id=str(data["run_id"]),
            created=str(data["created"]),
            finished=data.get("finished"),
            status=str(data["status"]),
            spec=dict(data.get("spec", {})),
            spec_hash=str(data.get("spec_hash", "")),
            spec_path=str(data.get("spec_path", "")),
            device=str(data.get("device", "cpu")),
            env=dict(data.get("env", {})),
            points=tuple(PointResult.from_dict(p) for p in data.get("points", [])),
            artifacts=dict(data.get("artifacts", {})),
            schema_version=SCHEMA_VERSION,
        )


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a run record of any known schema version up to SCHEMA_VERSION."""
    version = data.get("schema_version")
    if version == SCHEMA_VERSION:
        return data
    raise StoreError(
        f"run record has schema_version {version!r}; this perfkit reads up to {SCHEMA_VERSION}; "
        "upgrade perfkit"
    )


def load_run(path: str | Path) -> Run:
    """Load a run from a run directory or a run.json file."""
    p = Path(path)
    if p.is_dir():
        p = p / RUN_FILE
    if not p.exists():
        partial = p.with_name(PARTIAL_FILE)
        hint = (
            "the run did not finish (only run.partial.json exists)"
            if partial.exists()
            else "not a perfkit run directory"
        )
        raise StoreError(f"{p}: no run record; {hint}")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise StoreError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); re-run the profile") from exc
    if not isinstance(data, dict) or "run_id" not in data:
        raise StoreError(f"{p}: not a perfkit run record (no run_id); pass a run directory")
    try:
        return Run.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{p}: malformed run record ({exc!r}); re-run the profile") from exc
