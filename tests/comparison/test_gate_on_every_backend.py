"""The gate end to end (perfkit.cli.main) with its history in each backend's store: the same
verdicts from the same history on SQLite, PostgreSQL and DuckDB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.cli import main
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.store.api import store_run
from tests.store import factory as f

pytestmark = pytest.mark.slow


def _run_dir(tmp_path: Path, run_id: str, level: float, seed: int, **kw: Any) -> Path:
    run = f.make_run(run_id, f.noisy(level, 10, seed), created="2026-02-01T00:00:00Z", **kw)
    d = tmp_path / run_id
    write_json_atomic(d / "run.json", to_builtins(run))
    return d


def test_gate_verdicts_are_the_same_on_every_backend(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PERFKIT_DB", db_url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    rng = np.random.default_rng(0)
    for i in range(12):
        level = 1e-3 * float(np.exp(rng.normal(0, 0.01)))
        store_run(f.make_run(f"hist{i:02d}", f.noisy(level, 10, 100 + i), commit=f"h{i:02d}",
                             created=f"2026-01-{i + 1:02d}T00:00:00Z"), db_url)
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    same = _run_dir(tmp_path, "same", 1e-3, 2)
    slow = _run_dir(tmp_path, "slow", 1.15e-3, 3, commit="bad0001")
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {m["verdict"] for m in out["metrics"]} <= {"unchanged", "inconclusive"} and not out["failed"]
    assert main(["gate", "--baseline", str(base), "--candidate", str(slow), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] and "regressed" in {m["verdict"] for m in out["metrics"]}
    assert {m["history_runs"] for m in out["metrics"]} == {13}  # the 12 stored runs and the stored baseline
