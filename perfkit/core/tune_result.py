"""The tune table's record: per tuned workload and shape, the best configuration and its verdict.

`TuneResult` (one shape of one `kind: custom` workload with a `tune:` block) holds every timed or
failed configuration (`ConfigResult`), the best (lowest median), the runner-up, and whether the
two are distinguishable (their 95% confidence intervals do not overlap: the rule is
perfkit/regression/ci_overlap.py, applied by perfkit/workloads/tune.py, which builds these).

`write_tune_json(path, results, ...)` writes RUN/tune.json (perfkit/pipeline/tune_report.py
calls it); `read_tune(path)` reads it back for the reports and the dashboard and raises a
one-line StoreError naming the file and where in it (`tune.json:3:1`, `$.shapes[0].best.n`)
when the file is damaged. The file form (schema_version 1):

    {"schema_version": 1, "run_id": ..., "device": ..., "confidence": 0.95,
     "autotune": {workload: {"key": [...], "configs": ["triton.Config(...)", ...]}},
     "shapes": [TuneResult, ...]}

where a TuneResult also carries its derived values (speedup_vs_runner_up, configs_timed,
configs_failed; a configuration its `triton_config` text); they are recomputed on reading.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from perfkit.core.atomic import write_bytes_atomic
from perfkit.core.codec import RecordError, from_builtins, to_builtins
from perfkit.core.errors import StoreError
from perfkit.core.json_file import load_json
from perfkit.core.record import STATUS_OK

TUNE_SCHEMA_VERSION = 1
TUNE_CONFIDENCE = 0.95
# Axis names that are triton.Config keyword arguments rather than kernel meta-parameters.
TRITON_LAUNCH_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def triton_config(config: dict[str, Any]) -> str:
    """The `triton.Config(...)` text of a configuration, ready to paste into triton.autotune."""
    meta = {k: v for k, v in config.items() if k not in TRITON_LAUNCH_KEYS}
    launch = [f"{k}={config[k]!r}" for k in TRITON_LAUNCH_KEYS if k in config]
    return f"triton.Config({meta!r}" + "".join(f", {a}" for a in launch) + ")"


@dataclass(frozen=True)
class ConfigResult:
    """One configuration of one shape: how its point ended and its timing (None: not timed)."""

    config: dict[str, Any]
    key: str
    status: str
    error: str | None = None
    median_s: float | None = None
    ci_low_s: float | None = None
    ci_high_s: float | None = None
    n: int = 0
    timing_skipped: str | None = None

    JSON_KEYS: ClassVar[tuple[str, ...]] = ("config", "key", "status", "error", "median_s", "ci_low_s",
                                            "ci_high_s", "n", "timing_skipped", "triton_config")

    @property
    def timed(self) -> bool:
        return self.status == STATUS_OK and self.median_s is not None

    @property
    def triton_config(self) -> str:
        return triton_config(self.config)


@dataclass(frozen=True)
class TuneResult:
    """One shape of one tuned workload: best and runner-up configuration, and the verdict."""

    workload: str
    shape: dict[str, Any]
    configs: tuple[ConfigResult, ...]
    best: ConfigResult | None
    runner_up: ConfigResult | None
    distinguishable: bool | None  # None: no runner-up, or too few samples for a CI
    note: str

    JSON_KEYS: ClassVar[tuple[str, ...]] = (
        "workload", "shape", "best", "runner_up", "distinguishable", "speedup_vs_runner_up",
        "configs_timed=timed", "configs_failed=failed", "note", "configs")

    @property
    def speedup_vs_runner_up(self) -> float | None:
        """Runner-up's median / best's median (2.0: best takes half the time); None without both."""
        if self.best is None or self.runner_up is None:
            return None
        best_s, runner_s = self.best.median_s, self.runner_up.median_s
        if best_s is None or runner_s is None or best_s <= 0:
            return None
        return runner_s / best_s

    @property
    def failed(self) -> int:
        return sum(1 for c in self.configs if c.status != STATUS_OK)

    @property
    def timed(self) -> int:
        return sum(1 for c in self.configs if c.timed)


@dataclass(frozen=True)
class _TuneFile:
    """What read_tune needs of the file; its other keys (run_id, autotune, ...) are not read back."""

    schema_version: int
    shapes: tuple[TuneResult, ...]


def tune_document(results: list[TuneResult], *, run_id: str, device: str,
                  autotune: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The JSON-ready content of tune.json."""
    return {
        "schema_version": TUNE_SCHEMA_VERSION,
        "run_id": run_id,
        "device": device,
        "confidence": TUNE_CONFIDENCE,
        "autotune": autotune,
        "shapes": to_builtins(list(results)),
    }


def write_tune_json(path: Path, results: list[TuneResult], *, run_id: str, device: str,
                    autotune: dict[str, dict[str, Any]] | None = None) -> None:
    """Write tune.json (atomically); `autotune`: per workload the `@triton.autotune` key and configs."""
    doc = tune_document(results, run_id=run_id, device=device, autotune=autotune or {})
    write_bytes_atomic(path, json.dumps(doc, indent=1, allow_nan=True).encode() + b"\n")


def read_tune(path: Path) -> list[TuneResult]:
    """The tune results in a tune.json; StoreError (one line, located) when it cannot be used."""
    try:
        data = load_json(path, "re-run `perfkit profile` to write it again")
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the tune table: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path}: not a tune table (a JSON object with `shapes` expected)")
    version = data.get("schema_version")
    if isinstance(version, int) and version > TUNE_SCHEMA_VERSION:
        raise StoreError(f"{path}: tune table schema {version} is newer than this perfkit reads "
                         f"({TUNE_SCHEMA_VERSION}); upgrade perfkit")
    try:
        return list(from_builtins(_TuneFile, data).shapes)
    except RecordError as exc:
        raise StoreError(f"{path}: damaged tune table: {exc}") from None
