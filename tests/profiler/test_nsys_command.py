"""`perfkit profile --nsys`: the nsys command lines, the child pass, and the error without nsys."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perfkit.analyzers.loaders.nsys.export import export_command, sqlite_beside
from perfkit.core.errors import DeviceError
from perfkit.profiler.nsys_command import profile_command, report_paths, run_nsys
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]


def test_profile_command_is_lean_cuda_nvtx_and_graph_nodes(tmp_path: Path) -> None:
    base, report, sqlite = report_paths(tmp_path / "nsys")
    assert (report.name, sqlite.name) == ("report.nsys-rep", "report.sqlite") and base.parent == report.parent
    cmd = profile_command("/opt/nsys", base, ["python", "-m", "perfkit.pipeline.worker", "worker.nsys.json"])
    assert cmd == ["/opt/nsys", "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
                   "--cuda-graph-trace=node", "--force-overwrite", "true", "--output", str(base),
                   "python", "-m", "perfkit.pipeline.worker", "worker.nsys.json"]
    with pytest.raises(ValueError):
        profile_command("nsys", base, [])


def test_osrt_only_on_request_and_still_without_sampling(tmp_path: Path) -> None:
    cmd = profile_command("nsys", tmp_path / "r", ["true"], osrt=True)
    assert "--trace=cuda,nvtx,osrt" in cmd and "--sample=none" in cmd and "--cpuctxsw=none" in cmd
    from perfkit.pipeline.spec import RunSpec

    spec = RunSpec.model_validate({"name": "n", "profile": {"nsys_osrt": True},
                                   "workloads": [{"kind": "gemm", "m": 8, "n": 8, "k": 8}]})
    assert spec.profile.nsys_osrt and not RunSpec.model_validate(
        {"name": "n", "workloads": [{"kind": "gemm", "m": 8, "n": 8, "k": 8}]}).profile.nsys_osrt


def test_export_command_writes_sqlite_beside_the_report(tmp_path: Path) -> None:
    report = tmp_path / "run.nsys-rep"
    assert sqlite_beside(report) == tmp_path / "run.sqlite"
    assert export_command("nsys", report, sqlite_beside(report)) == [
        "nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(tmp_path / "run.sqlite"),
        str(report)]


def test_child_command_reruns_the_spec_as_the_nsys_pass(tmp_path: Path) -> None:
    from perfkit.pipeline.post_run import pass_command
    from perfkit.pipeline.spec import RunSpec
    from perfkit.pipeline.worker_task import ROLE_NSYS, read_task

    class _Run:  # the two fields the command reads
        spec_path = "model.yaml"
        device = "cuda:0"

    spec = RunSpec.model_validate({"name": "n", "workloads": [{"kind": "gemm", "m": 8, "n": 8, "k": 8}]})
    cmd = pass_command(ROLE_NSYS, spec, _Run(), tmp_path)  # type: ignore[arg-type]
    assert cmd == [sys.executable, "-m", "perfkit.pipeline.worker", str(tmp_path / "worker.nsys.json")]
    task = read_task(Path(cmd[-1]))
    assert (task.role, task.spec, task.device) == ("nsys", spec, "cuda:0")
    assert task.out_dir == tmp_path / "nsys" / "runs"


def test_a_failing_nsys_is_a_device_error_naming_the_step(tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match=r"nsys profile failed \(exit 1"):
        run_nsys("false", ["true"], tmp_path / "nsys")  # `false` stands where nsys would be: exits 1
    with pytest.raises(DeviceError, match="wrote no report"):
        run_nsys("true", ["true"], tmp_path / "nsys")  # exits 0 and writes nothing


def test_profile_nsys_without_nsys_is_one_line_exit_2_before_the_sweep(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": os.path.dirname(sys.executable), "CUDA_HOME": str(tmp_path), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = run_perfkit(["profile", str(REPO / "examples" / "gemm-cpu.yaml"), "--nsys", "--out", str(tmp_path / "runs"),
                        "--no-store"], tmp_path, env, timeout_s=120)
    err = proc.stderr.strip()
    from perfkit.core.cuda_tools import search_cuda_tool

    if search_cuda_tool("nsys", env=env).path is not None:
        pytest.skip("nsys is installed on this machine")
    assert proc.returncode == 2, err[-2000:]
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "nsys" in err and "--nsys" in err
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_nsys_step_skips_a_cpu_run(tmp_path: Path) -> None:
    from perfkit.core.artifacts import Artifacts
    from perfkit.pipeline.post_run import nsys_step
    from perfkit.pipeline.spec import RunSpec

    class _Run:
        spec_path = "model.yaml"
        device = "cpu"

    spec = RunSpec.model_validate({"name": "n", "workloads": [{"kind": "gemm", "m": 8, "n": 8, "k": 8}]})
    messages: list[str] = []
    assert nsys_step(spec, _Run(), tmp_path, messages) == Artifacts(nsys_error="run on cpu")  # type: ignore[arg-type]
    assert "skipped" in messages[0] and not (tmp_path / "nsys").exists()
