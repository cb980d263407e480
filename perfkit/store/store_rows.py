"""The rows one StoredRun becomes (runs, points, metrics, kernels) as insert parameters, and the
check that what is stored is finite: shared by the SQL write path (perfkit.store.write) and the
Parquet lake's (perfkit.store.lake_write)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

from perfkit.core.codec import to_builtins
from perfkit.core.errors import StoreError
from perfkit.store.records import StoredRun


def _dumps(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, allow_nan=True, default=str)


def check_finite(run: StoredRun) -> None:
    """What is stored, not only what was read, must be finite: one inf poisons every query of its series."""
    for m in run.metrics:
        if not math.isfinite(m.value) or not all(math.isfinite(v) for v in m.samples):
            raise StoreError(f"run {run.run_id}: metric {m.name}{f' of {m.point_key}' if m.point_key else ''} is not "
                             "finite (inf or nan, e.g. values near the float limit); nothing was written. "
                             "Fix the input values")


def run_row(run: StoredRun) -> dict[str, object]:
    """The `runs` row of `run` (stored now)."""
    return {
        "run_id": run.run_id, "created": run.created, "created_epoch": run.created_epoch,
        "commit": run.commit, "branch": run.branch, "dirty": run.dirty, "gpu": run.gpu,
        "gpu_driver": run.gpu_driver, "host": run.host, "device": run.device, "status": run.status,
        "spec_hash": run.spec_hash, "spec_path": run.spec_path, "env_json": _dumps(to_builtins(run.env)),
        "spec_json": _dumps(run.spec), "run_json": _dumps(run.extra), "record_schema": run.record_schema,
        "source": run.source, "stored": datetime.now(timezone.utc).isoformat(),
    }


def point_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "position": i, "key": p.key, "kind": p.kind, "workload": p.workload,
             "status": p.status, "params_json": _dumps(p.params), "point_json": _dumps(p.point)}
            for i, p in enumerate(run.points)]


def metric_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "point_key": m.point_key, "name": m.name, "value": m.value, "unit": m.unit,
             "direction": m.direction, "n": len(m.samples)} for m in run.metrics]


def kernel_table_rows(run: StoredRun) -> list[dict[str, object]]:
    return [{"run_id": run.run_id, "point_key": k.point_key, "name": k.name, "calls": k.calls,
             "total_ns": k.total_ns, "extra_json": _dumps(k.extra)} for k in run.kernels]


