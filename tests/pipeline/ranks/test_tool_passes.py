"""Multi-rank specs in `profile --ncu` / `--nsys`: the nsys pass runs the ranks under torchrun (here
2 gloo ranks on the CPU, the pass's calls on every rank, nsys itself not needed to check that);
the ncu pass is refused in plain words in the run record and the output, never run on one rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.pipeline.spec import RunSpec
from perfkit.pipeline.worker_task import ROLE_NSYS, WorkerTask, write_task

REPO = Path(__file__).resolve().parents[3]
pytest.importorskip("torch.distributed")

SPEC = {"name": "passes", "device": "cpu", "cpu_threads": 1, "launch": {"nproc": 2, "point_timeout_s": 60},
        "profile": {"profiled_iters": 2},
        "workloads": [{"kind": "collectives", "ops": ["all_reduce", "all_gather"], "size_bytes": [1024]}]}


class _Run:  # the fields the steps read
    spec_path = "model.yaml"
    device = "cuda:0"


def test_the_ncu_pass_of_a_multi_rank_spec_is_refused_plainly(tmp_path: Path) -> None:
    from perfkit.pipeline.post_run import PostRunOptions, ncu_step

    messages: list[str] = []
    got = ncu_step(RunSpec.model_validate(SPEC), _Run(), tmp_path, PostRunOptions(ncu=True), messages)  # type: ignore[arg-type]
    assert got.ncu is None and got.ncu_error is not None and got.ncu_error.startswith("not profiled: the spec runs 2")
    assert "NCCL" in got.ncu_error and "--nsys" in got.ncu_error
    assert messages == [f"--ncu: {got.ncu_error}"] and not (tmp_path / "ncu").exists()


@pytest.mark.slow
def test_the_nsys_pass_runs_every_rank_under_torchrun(tmp_path: Path) -> None:
    """The child nsys would wrap: the validated spec as the nsys pass, which starts torchrun itself."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    task = write_task(WorkerTask(role=ROLE_NSYS, spec=RunSpec.model_validate(SPEC), spec_path="model.yaml",
                                 run_dir=run_dir, device="cpu"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "perfkit.pipeline.worker", str(task)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    child = Path(proc.stdout.strip().splitlines()[-1])
    assert child.parent == run_dir / "nsys" / "runs"
    rank_task = json.loads((child / "worker.rank.json").read_text())
    assert rank_task["tool_pass"] == "nsys" and rank_task["role"] == "rank"
    run = load_run(child)
    assert run.status == "complete" and run.artifacts.launches == 1
    assert [p.params["op"] for p in run.points] == ["all_reduce", "all_gather"]
    for p in run.points:
        assert p.status == "ok", p.error
        assert p.metrics == {"nsys_pass": True, "ranks": 2} and p.measurement is None and p.trace is None
