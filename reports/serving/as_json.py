"""`serve-bench --format json`: the run's stages as one JSON document on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from perfkit.core.record import Run
from perfkit.reports.serving.rows import is_serving


def stages_json(run: Run, run_dir: Path) -> str:
    stages = [{"key": p.key, "params": p.params, "status": p.status, "error": p.error,
               "metrics": {k: v for k, v in p.metrics.items() if k not in ("request_samples", "window_samples")}}
              for p in run.points if is_serving(p)]
    doc = {"run_id": run.run_id, "run_dir": str(run_dir), "status": run.status, "stages": stages}
    return json.dumps(doc, indent=2, default=str, allow_nan=False)
