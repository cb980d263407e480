"""A torchrun that fails on its way out after every point ran keeps the run complete; one that
refuses its arguments is exit 2 with its own error line.

torchrun can exit non-zero after the last point (a rank that fails while tearing down its
process group): the sweep is done, so the run stays complete with every point, and the exit is
noted in `artifacts.launch_exit` instead of being blamed on a point that does not exist. The
torchrun here is replaced by a function that writes every point and returns exit code 1: what
is tested is the launcher's bookkeeping (the real torchrun paths are in test_torchrun_cpu.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import perfkit.pipeline.ranks.launch as launch
from perfkit.core.record import RUN_COMPLETE, STATUS_OK, PointResult, load_run
from perfkit.pipeline.ranks.markers import LaunchLog
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import load_spec
from perfkit.pipeline.sweep import ProfileOptions, start_run
from tests.helpers.forked_cli import run_perfkit

SPEC = """\
name: two-ranks
device: cpu
cpu_threads: 1
launch: {nproc: 2}
workloads:
  - kind: gemm
    m: [16, 32, 48]
    n: 16
    k: 16
"""


def test_failing_exit_after_every_point_keeps_the_run_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec_path = tmp_path / "two.yaml"
    spec_path.write_text(SPEC)
    spec = load_spec(spec_path)
    run, run_dir, points = start_run(spec, spec_path, ProfileOptions(out_dir=tmp_path / "runs"))
    assert len(points) == 3
    calls = []

    def every_point_then_exit_1(cmd: list[str], run_dir_: Path, points_: list, progress: object, echo: bool) -> tuple[LaunchLog, int, str | None]:
        calls.append(cmd)
        done = tuple(PointResult(key=p.key, kind=p.kind, workload=p.workload, params=dict(p.params), status=STATUS_OK)
                     for p in points_)
        write_partial(run_dir_, run.with_points(done))
        return LaunchLog.empty(), 1, None

    monkeypatch.setattr(launch, "_launch", every_point_then_exit_1)
    final = launch.execute_launched(run, run_dir, points, spec, spec_path, ProfileOptions(out_dir=tmp_path / "runs"))
    assert len(calls) == 1  # not relaunched
    assert final.status == RUN_COMPLETE
    assert [p.status for p in final.points] == [STATUS_OK] * 3
    assert final.artifacts.launch_exit.startswith("torchrun exited with 1 after every point ran")


BOGUS = SPEC.replace("launch: {nproc: 2}", 'launch: {nproc: 2, torchrun_args: ["--bogus-flag"]}')


@pytest.mark.slow
def test_torchrun_refusing_its_arguments_is_exit_2_with_its_error_line(tmp_path: Path) -> None:
    """Not 130 (Ctrl-C's code) with the cause hidden under --quiet: exit 2, torchrun's own line."""
    spec_path = tmp_path / "bogus.yaml"
    spec_path.write_text(BOGUS)
    repo = Path(__file__).resolve().parents[3]
    proc = run_perfkit(["profile", str(spec_path), "--quiet", "--no-store", "--out", str(tmp_path / "runs")],
                       Path.cwd(), {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo)})
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-3000:])
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err[-3000:]
    assert "unrecognized arguments: --bogus-flag" in err and "launch.torchrun_args" in err
    (run_dir,) = (tmp_path / "runs").iterdir()
    run = load_run(run_dir)
    assert run.status == "interrupted" and run.points == ()
    assert run.artifacts.interrupted_by == "torchrun failure"
    assert "unrecognized arguments: --bogus-flag" in (run.artifacts.launch_failed or "")


@pytest.mark.parametrize(("text", "line"), [
    ("usage: torchrun [-h]\n  training_script ...\nrun.py: error: unrecognized arguments: --x\n",
     "run.py: error: unrecognized arguments: --x"),
    ("Traceback (most recent call last):\n  File \"x\", line 1\nRuntimeError: rendezvous failed\n",
     "RuntimeError: rendezvous failed"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: port in use\n",
     "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: port in use"),
    ("all is well\n", None),
])
def test_first_error_line(text: str, line: str | None) -> None:
    assert launch.first_error_line(text) == line
