"""A full disk during `perfkit profile`: a real tmpfs that fills up (root only, else skipped).

What must hold: the points measured are kept (run.json, or run.partial.json, and the store when
it lives elsewhere), the error is one line naming the step and the command that finishes the
job, and exit 0 never happens without the run in the store.
"""

from __future__ import annotations

import contextlib
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
from tests.helpers.tmpfs import tmpfs

REPO = Path(__file__).resolve().parents[2]

SPEC = """\
name: disk
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.005, budget_s: 0.02, min_reps: 6, target_rel_ci: 0.2}
profile: {profiled_iters: 1}
workloads:
  - kind: gemm
    m: [8, 16, 32, 64]
    n: 8
    k: 8
    dtypes: [fp32]
"""


def _fill(folder: Path, leave_bytes: int = 0) -> None:
    """Take every free byte of the filesystem holding `folder` but about `leave_bytes`."""
    filler = folder / "filler"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as fh:
        while True:
            fh.write(b"\0" * 4096)
    if leave_bytes:
        os.truncate(filler, max(filler.stat().st_size - leave_bytes, 0))


@pytest.mark.slow
def test_sweep_on_a_full_disk_keeps_the_points_and_exits_2_in_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "disk.yaml"
    spec.write_text(SPEC)
    db = tmp_path / "store.db"
    with tmpfs(tmp_path / "small", 24) as small:
        proc = run_perfkit(["profile", str(spec), "--out", str(small), "--quiet", "--db", str(db)], tmp_path,
                           {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)})
        err = proc.stderr.strip()
        assert proc.returncode == 2, (proc.returncode, err[-2000:])
        line = err.splitlines()[-1]
        assert "Traceback" not in err and len(line) < 1000
        assert "No space left on device" in line and "perfkit ingest --partial" in line
        assert "in the store" in line  # the store is on another disk: every measured point is there
        run_dir = next(small.iterdir())
        assert (run_dir / PARTIAL_FILE).is_file() or (run_dir / RUN_FILE).is_file()
    history = run_perfkit(["history", "gemm*", "--db", str(db), "--format", "json"], tmp_path,
                          {**os.environ, "PYTHONPATH": str(REPO)}, timeout_s=120)
    assert history.returncode == 0, history.stderr
    assert "gemm/" in history.stdout


@pytest.mark.slow
def test_a_post_step_on_a_full_disk_drops_only_that_step(tmp_path: Path) -> None:
    spec_path = tmp_path / "disk.yaml"
    spec_path.write_text(SPEC.replace("m: [8, 16, 32, 64]", "m: [8, 16]"))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    with tmpfs(tmp_path / "small", 512) as small:
        def fill_after_sweep(_run: Any) -> None:
            # room for run.json (a little more than run.partial.json), not for the analysis' tables
            partial = next(small.glob(f"*/{PARTIAL_FILE}"))
            _fill(small, leave_bytes=(partial.stat().st_size * 3 // 2 // 4096 + 2) * 4096)

        outcome = pipeline.profile(load_spec(spec_path), spec_path, ProfileOptions(out_dir=small),
                                   PostRunOptions(db_url=db), pipeline.ProfileHooks(sweep_done=fill_after_sweep))
        (small / "filler").unlink()
        run = load_run(outcome.run_dir)
    assert run.status == "complete" and len(run.points) == 2
    failed = run.artifacts.post_run_failed
    assert failed is not None and failed.step == "analysis"
    assert "No space left on device" in failed.error
    assert any(m.startswith("analysis failed (No space left on device)") for m in outcome.messages)
    assert outcome.stored is True


def test_step_outputs_name_the_folders_the_steps_write() -> None:
    from perfkit.core.run_layout import ANALYSIS_DIR

    assert pipeline.STEP_OUTPUTS["analysis"] == (ANALYSIS_DIR,)
