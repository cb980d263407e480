"""A torchrun that fails on its way out after every point ran keeps the run complete.

torchrun can exit non-zero after the last point (a rank that fails while tearing down its
process group): the sweep is done, so the run stays complete with every point, and the exit is
noted in `artifacts.launch_exit` instead of being blamed on a point that does not exist. The
torchrun here is replaced by a function that writes every point and returns exit code 1: what
is tested is the launcher's bookkeeping (the real torchrun paths are in test_torchrun_cpu.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import perfkit.pipeline.ranks.launch as launch
from perfkit.core.record import RUN_COMPLETE, STATUS_OK, PointResult
from perfkit.pipeline.ranks.markers import LaunchLog
from perfkit.pipeline.run_files import write_partial
from perfkit.pipeline.spec import load_spec
from perfkit.pipeline.sweep import ProfileOptions, start_run

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

    def every_point_then_exit_1(cmd: list[str], run_dir_: Path, points_: list, progress: object, echo: bool) -> tuple[LaunchLog, int]:
        calls.append(cmd)
        done = tuple(PointResult(key=p.key, kind=p.kind, workload=p.workload, params=dict(p.params), status=STATUS_OK)
                     for p in points_)
        write_partial(run_dir_, run.with_points(done))
        return LaunchLog.empty(), 1

    monkeypatch.setattr(launch, "_launch", every_point_then_exit_1)
    final = launch.execute_launched(run, run_dir, points, spec, spec_path, ProfileOptions(out_dir=tmp_path / "runs"))
    assert len(calls) == 1  # not relaunched
    assert final.status == RUN_COMPLETE
    assert [p.status for p in final.points] == [STATUS_OK] * 3
    assert final.artifacts.launch_exit.startswith("torchrun exited with 1 after every point ran")
