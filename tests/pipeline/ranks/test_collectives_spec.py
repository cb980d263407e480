"""The collectives spec, its cost model and the launcher's reading of torchrun's output (no ranks run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.pipeline.ranks.launch import rank_task, torchrun_command
from perfkit.pipeline.ranks.markers import LaunchLog, describe, done_line, fail_line, start_line
from perfkit.pipeline.spec import load_spec
from perfkit.pipeline.worker_task import WorkerTask, read_task
from perfkit.workloads.collectives.cost import bus_factor, busbw_bytes_per_s, message_elements

REPO = Path(__file__).resolve().parents[3]

SPEC = """\
name: c
device: cpu
{launch}
workloads:
  - kind: collectives
    ops: [all_reduce, broadcast]
    {size}
    dtypes: [fp32, int32]
"""


def _write(tmp_path: Path, launch: str = "launch: {nproc: 2}", size: str = "size_bytes: [8, 1024]") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(launch=launch, size=size))
    return path


def test_points_sweep_ops_dtypes_sizes(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path))
    keys = [p.key for p in spec.points()]
    assert len(keys) == 8
    assert keys[0] == "collectives/collectives/op=all_reduce,dtype=fp32,size_bytes=8"
    assert spec.nproc == 2 and spec.to_dict()["launch"]["nproc"] == 2


def test_collectives_without_ranks_is_a_located_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"spec.yaml:5:\d+: kind 'collectives' needs several ranks.*--nproc 2"):
        load_spec(_write(tmp_path, launch=""))


def test_nproc_option_replaces_the_spec(tmp_path: Path) -> None:
    assert load_spec(_write(tmp_path, launch=""), nproc=4).nproc == 4
    with pytest.raises(SpecError, match="needs several ranks"):
        load_spec(_write(tmp_path), nproc=1)


def test_no_launch_leaves_the_spec_hash_alone(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("name: g\nworkloads:\n  - kind: gemm\n    m: 8\n    n: 8\n    k: 8\n")
    assert "launch" not in load_spec(path).to_dict()


@pytest.mark.parametrize(("size", "message"), [
    ("size_bytes: [8]\n    elements: [2]", "exactly one of 'size_bytes' or 'elements'"),
    ("dtypes_x: 1", "unknown key 'dtypes_x'"),
])
def test_bad_sizes(tmp_path: Path, size: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_spec(_write(tmp_path, size=size))


def test_unknown_op_and_dtype(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SPEC.format(launch="launch: {nproc: 2}", size="size_bytes: 8").replace("broadcast", "allgatherv"))
    with pytest.raises(SpecError, match="unknown collective 'allgatherv'"):
        load_spec(path)
    path.write_text(SPEC.format(launch="launch: {nproc: 2}", size="size_bytes: 8").replace("int32", "int8"))
    with pytest.raises(SpecError, match="unknown dtype 'int8'"):
        load_spec(path)


def test_bus_factors_are_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    assert bus_factor("all_to_all", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 8) == 1.0
    assert busbw_bytes_per_s("all_reduce", 1e9, 0.5, 8) == pytest.approx(2e9 * 1.75)


def test_message_elements_split_per_rank() -> None:
    assert message_elements("all_reduce", 12, 4, 2) == 3
    assert message_elements("all_gather", 12, 4, 2) == 2  # rounded down to a multiple of n
    assert message_elements("all_to_all", 4, 4, 2) == 0  # one element cannot be split in two


ROOT_CAUSE = """\
Root Cause (first observed failure):
[0]:
  time      : 2026-11-26_04:57:21
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 18421)  (SIGKILL)
"""


def test_launch_log_names_a_killed_rank_over_the_errors_of_the_others() -> None:
    log = LaunchLog.empty()
    for line in [start_line(0), done_line(0), start_line(1), fail_line(0, 1, "error", "Connection closed by peer")]:
        assert log.feed(line + "\n")
    for line in ROOT_CAUSE.splitlines():
        assert not log.feed(line)
    culprit = log.culprit(1)
    assert (culprit.rank, culprit.index, culprit.how) == (1, 1, "died")
    assert describe(culprit) == "rank 1 died (killed by SIGKILL)"


def test_launch_log_prefers_the_hung_rank_to_the_waiting_one() -> None:
    log = LaunchLog.empty()
    log.feed(start_line(3))
    log.feed(fail_line(0, 3, "waiting", "point still running after 5 s"))
    log.feed(fail_line(1, 3, "timeout", "point still running after 5 s"))
    assert (log.culprit(1).rank, log.running) == (1, 3)
    assert LaunchLog.empty().culprit(7).rank == -1


def test_torchrun_command_defaults_to_standalone(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path))
    (tmp_path / "run").mkdir()
    task = rank_task(spec, tmp_path / "spec.yaml", tmp_path / "run", "cpu", quick=True)
    cmd = torchrun_command(spec, task)
    assert cmd[1:6] == ["-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone"]
    assert cmd[-3:] == ["-m", "perfkit.pipeline.worker", str(tmp_path / "run" / "worker.rank.json")]
    assert read_task(task) == WorkerTask(role="rank", spec=spec, spec_path=str(tmp_path / "spec.yaml"),
                                         run_dir=tmp_path / "run", device="cpu", quick=True)
    many = load_spec(_write(tmp_path, launch="launch: {nproc: 8, torchrun_args: [--nnodes=2, --rdzv-endpoint=h:29400]}"))
    cmd = torchrun_command(many, task)
    assert "--standalone" not in cmd and "--nnodes=2" in cmd and "--rdzv-endpoint=h:29400" in cmd


def test_rank_timing_defaults_to_nccl_tests_and_keeps_lockstep(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path))
    w = spec.workloads[0]
    assert (w.rank_timing, w.iters, w.warmup_iters) == ("nccl_tests", 20, 5)  # type: ignore[attr-defined]
    assert spec.to_dict()["workloads"][0]["rank_timing"] == "nccl_tests"  # in the record and the spec hash
    lock = load_spec(_write(tmp_path, size="size_bytes: [8]\n    rank_timing: lockstep\n    iters: 50"))
    assert lock.workloads[0].rank_timing == "lockstep" and lock.hash() != spec.hash()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="rank_timing"):
        load_spec(_write(tmp_path, size="size_bytes: [8]\n    rank_timing: barrier"))
    with pytest.raises(SpecError, match="iters"):
        load_spec(_write(tmp_path, size="size_bytes: [8]\n    iters: 0"))


def test_ops_in_any_spelling_are_the_analyzers_names(tmp_path: Path) -> None:
    """c10d / NCCL / gloo spellings name the same op the trace analyzers report; repeats collapse."""
    path = tmp_path / "s.yaml"
    text = SPEC.format(launch="launch: {nproc: 2}", size="size_bytes: 8")
    path.write_text(text.replace("broadcast", "allreduce, AllReduce, _allgather_base, alltoall"))
    spec = load_spec(path)
    ops = {p.params["op"] for p in spec.points()}
    assert ops >= {"all_reduce", "all_gather", "all_to_all"} and not ops & {"allreduce", "AllReduce"}
