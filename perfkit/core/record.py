"""The versioned run record (`run.json`): one `Run` with its `PointResult`s.

This is the contract between the profiler (writer) and the store, gate, reports, roofline
and dashboard (readers). Readers call `load_run`, which migrates older schema versions
(perfkit.core.migrate); perfkit.core.codec turns records into JSON-ready dicts and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from perfkit.core.artifacts import Artifacts, artifacts_data
from perfkit.core.bounded import NonNegative, PointStatus, RunId, RunStatus
from perfkit.core.codec import RecordError, from_builtins
from perfkit.core.cost import Cost
from perfkit.core.env import Env, GpuState
from perfkit.core.errors import StoreError
from perfkit.core.json_file import load_json
from perfkit.core.measurement import Measurement
from perfkit.core.memory_budget import MemoryBudget
from perfkit.core.migrate import SCHEMA_VERSION, migrate
from perfkit.core.profile_window import PointArtifacts
from perfkit.core.run_layout import PARTIAL_FILE, RUN_FILE

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
    rel_err: float  # ||out - ref|| / ||ref|| (Frobenius); NaN / inf when the output held them
    max_abs_err: float
    tol: NonNegative
    ok: bool


@dataclass(frozen=True)
class PointResult:
    """One point of a sweep: what ran, how long it took, what it cost, whether it was right."""

    key: str  # stable identity across runs: "kind/name/param=value,..."
    kind: str
    workload: str
    params: dict[str, Any]
    status: PointStatus  # ok | failed | skipped
    error: str | None = None
    measurement: Measurement | None = None
    cost: Cost | None = None
    numerics: Numerics | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # workload-specific extras (TTFT, ...)
    trace: str | None = None  # path relative to the run directory
    # the run's GPU read right after this point's timing, while still loaded (None: not read)
    gpu_after_timing: GpuState | None = None
    memory_budget: MemoryBudget | None = None  # profile: {memory: true} on a decode point
    # a serving stage's server traces and the profiling window they come from (serve-bench --profile)
    artifacts: PointArtifacts = field(default_factory=PointArtifacts)

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "key", "kind", "workload", "params", "status", "error", "measurement", "cost", "achieved",
        "numerics", "metrics", "trace", "gpu_after_timing", "memory_budget", "artifacts",
    )
    JSON_OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset({"gpu_after_timing", "memory_budget", "artifacts"})

    @property
    def median_s(self) -> float | None:
        return self.measurement.median_s if self.measurement and self.measurement.samples_s else None

    @property
    def throttled(self) -> tuple[str, ...]:
        """Throttle reasons slowing the GPU right after the timing (sw_power_cap, ...); () if unknown."""
        return self.gpu_after_timing.slowing_reasons() if self.gpu_after_timing else ()

    @property
    def achieved(self) -> dict[str, float]:
        med = self.median_s
        if self.cost is None or not med:
            return {}
        return {"flop_per_s": self.cost.flop / med, "bytes_per_s": self.cost.bytes / med}


@dataclass(frozen=True)
class Run:
    run_id: RunId
    created: str  # ISO 8601 UTC
    status: RunStatus  # complete | interrupted | running
    spec: dict[str, Any]
    spec_hash: str
    spec_path: str
    device: str  # "cpu" | "cuda"
    env: Env
    points: tuple[PointResult, ...] = ()
    finished: str | None = None
    artifacts: Artifacts = field(default_factory=Artifacts)
    schema_version: int = SCHEMA_VERSION

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "schema_version", "run_id", "created", "finished", "status", "device", "spec_path", "spec_hash",
        "spec", "env", "summary=counts", "artifacts", "points",
    )

    @property
    def counts(self) -> dict[str, int]:
        out = {STATUS_OK: 0, STATUS_FAILED: 0, STATUS_SKIPPED: 0}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    @property
    def commit(self) -> str | None:
        return self.env.git.commit

    def with_points(self, points: tuple[PointResult, ...]) -> Run:
        return replace(self, points=points)


def run_from_dict(data: dict[str, Any]) -> Run:
    """The Run a parsed run.json (of any known schema version) describes; RecordError if malformed."""
    data = migrate(data)
    return from_builtins(Run, {**data, "artifacts": artifacts_data(data.get("artifacts"))})


def _present(path: Path) -> bool:
    """Whether `path` is there, also as a link that leads nowhere or to itself (its reader then
    names the file and the loop in one line, rather than calling the directory no run)."""
    return path.exists() or path.is_symlink()


def load_run(path: str | Path, partial: bool = False) -> Run:
    """Load a run from a run directory or a run.json file.

    With `partial`, a directory holding only run.partial.json (a run killed before it ended)
    loads too: the points it recorded, status `interrupted`, `artifacts.recovered_from` set.
    """
    p = Path(path)
    if p.is_dir():
        p = p / RUN_FILE
    recovered = False
    if not _present(p):
        partial_path = p.with_name(PARTIAL_FILE)
        if partial and _present(partial_path):
            p, recovered = partial_path, True
        else:
            hint = (
                f"the run did not finish (only run.partial.json exists); store the points it recorded "
                f"with `perfkit ingest --partial {p.parent}`"
                if _present(partial_path)
                else "not a perfkit run directory"
            )
            raise StoreError(f"{p}: no run record; {hint}")
    data = load_json(p, "re-run the profile (or restore the record perfkit wrote)")
    if not isinstance(data, dict) or "run_id" not in data:
        raise StoreError(f"{p}: not a perfkit run record (no run_id); pass a run directory")
    try:
        run = run_from_dict(data)
    except StoreError as exc:  # a schema version this perfkit does not know
        raise StoreError(f"{p}: {exc}") from None
    except RecordError as exc:
        fix = "re-run the point or fix the record" if exc.where.startswith("points[") else \
            "fix the record or re-run the profile"
        raise StoreError(f"{p}: {exc}; {fix}") from None
    if recovered:
        run = replace(run, status=RUN_INTERRUPTED, artifacts=replace(run.artifacts, recovered_from=PARTIAL_FILE))
    return run
