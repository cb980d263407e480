"""perfkit.pipeline.profile: the steps in order, run.json written once, Ctrl-C and store failures."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import perfkit.pipeline.profile as pipeline
from perfkit.core.record import load_run
from perfkit.core.run_layout import PARTIAL_FILE, RUN_FILE
from perfkit.pipeline.post_run import PostRunOptions
from perfkit.pipeline.spec import load_spec
from perfkit.pipeline.sweep import ProfileOptions
from tests.helpers.forked_cli import run_perfkit

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

TINY = """\
name: tiny
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.005, budget_s: 0.02, min_reps: 6, target_rel_ci: 0.2}
profile: {profiled_iters: 1}
workloads:
  - kind: gemm
    name: sq
    m: [16, 32]
    n: 16
    k: 16
    dtypes: [fp32]
"""


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_steps_run_in_order_and_run_json_is_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[tuple[str, bool]] = []
    real_write = pipeline.write_final

    def counting_write(run_dir: Path, run: Any) -> Path:
        writes.append((run.status, (run_dir / PARTIAL_FILE).exists()))
        return real_write(run_dir, run)

    monkeypatch.setattr(pipeline, "write_final", counting_write)
    spec_path = _spec(tmp_path)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    outcome = pipeline.profile(load_spec(spec_path), spec_path, ProfileOptions(out_dir=tmp_path / "runs"),
                               PostRunOptions(db_url=db))
    assert writes == [("complete", True)]  # once, replacing the partial record
    run_dir = outcome.run_dir
    assert (run_dir / RUN_FILE).is_file() and not (run_dir / PARTIAL_FILE).exists()
    run = load_run(run_dir)
    assert run.status == "complete" and len(run.points) == 2
    assert run.artifacts.analysis  # the analysis step's artifacts are in the one run.json
    assert outcome.stored is True and any(m.startswith("stored in") for m in outcome.messages)


def test_ctrl_c_in_a_post_step_keeps_the_points_and_says_how_to_finish(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: Any) -> dict[str, Any]:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "analysis_step", interrupted)
    spec_path = _spec(tmp_path)
    outcome = pipeline.profile(load_spec(spec_path), spec_path, ProfileOptions(out_dir=tmp_path / "runs"),
                               PostRunOptions(db_url=f"sqlite:///{tmp_path / 'store.db'}"))
    assert outcome.interrupted_step == "analysis" and outcome.stored is None
    record = json.loads((outcome.run_dir / RUN_FILE).read_text())
    assert record["artifacts"]["post_run_interrupted"] == "analysis"
    assert len(record["points"]) == 2
    assert any(f"perfkit ingest {outcome.run_dir}" in m for m in outcome.messages)


def test_a_store_that_cannot_take_the_run_is_refused_before_the_sweep(tmp_path: Path) -> None:
    """--quiet or not: one line on stderr, exit 2, and no sweep measured for nothing."""
    not_a_db = tmp_path / "a-directory"
    not_a_db.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = run_perfkit(["profile", str(_spec(tmp_path)), "--quiet", "--no-analyze", "--out", str(tmp_path / "runs"),
                        "--db", f"sqlite:///{not_a_db}"], REPO, env)
    assert proc.returncode == 2, proc.stderr
    assert "is a directory" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_store_lost_during_the_sweep_keeps_the_run_and_says_how_to_store_it(tmp_path: Path) -> None:
    db = tmp_path / "store.db"

    def lose_the_store(_run: Any) -> None:  # the store's disk goes away while the sweep runs
        for path in tmp_path.glob("store.db*"):
            path.unlink()
        db.mkdir()

    spec_path = _spec(tmp_path)
    outcome = pipeline.profile(load_spec(spec_path), spec_path, ProfileOptions(out_dir=tmp_path / "runs"),
                               PostRunOptions(db_url=f"sqlite:///{db}", analyze=False),
                               pipeline.ProfileHooks(sweep_done=lose_the_store))
    assert outcome.stored is False
    assert any("not stored" in m and f"perfkit ingest {outcome.run_dir}" in m for m in outcome.messages)
    assert load_run(outcome.run_dir).status == "complete"

