"""`perfkit doctor`'s NCCL, visible-GPU and nsys-sampling checks on typed readings (no GPU needed),
and the readers on this machine's real files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfkit.profiler.doctor.dist_checks import (
    check_nccl,
    check_nsys_sampling,
    check_visible_gpus,
    dist_checks,
)
from perfkit.profiler.doctor.dist_readings import nccl_version, perf_event_paranoid, read_dist
from perfkit.profiler.doctor.model import FAIL, OK, SKIP, WARN, DistReadings, ToolReading

EIGHT = DistReadings(nccl="2.21.5", nccl_reason=None, visible_gpus=8, cuda_visible_devices=None, spec_nproc=8,
                     perf_event_paranoid=2)
NSYS = ToolReading("nsys", "/opt/nvidia/nsight-systems/2024.5.1/bin/nsys", "nsys 2024.5.1")


def test_an_eight_gpu_box_running_an_eight_rank_spec_passes() -> None:
    checks = dist_checks(EIGHT, True, (NSYS,))
    assert [(c.name, c.status) for c in checks] == [("nccl", OK), ("gpus.visible", OK), ("tools.nsys.sampling", OK)]
    assert "NCCL 2.21.5" in checks[0].value and "launch.nproc 8" in checks[1].value


def test_more_ranks_than_visible_gpus_fails_with_the_fix() -> None:
    check = check_visible_gpus(replace(EIGHT, visible_gpus=1, cuda_visible_devices="3", spec_nproc=4), True)
    assert check.status == FAIL and "1 visible (CUDA_VISIBLE_DEVICES='3')" in check.value
    assert "launch.nproc is 4" in check.value and "Duplicate GPU" in check.advice and "to 1" in check.advice


def test_visible_gpus_without_a_spec_or_a_driver() -> None:
    assert check_visible_gpus(replace(EIGHT, spec_nproc=None), True).status == OK
    assert "--spec" in check_visible_gpus(replace(EIGHT, spec_nproc=None), True).value
    assert check_visible_gpus(replace(EIGHT, visible_gpus=None), False).status == SKIP


def test_nccl_missing_fails_only_where_a_multi_rank_cuda_run_needs_it() -> None:
    cpu_torch = replace(EIGHT, nccl=None, nccl_reason="a CPU build of torch (no NCCL; multi-rank runs use gloo)")
    assert check_nccl(cpu_torch, has_driver=False, multi_rank=True).status == SKIP
    assert check_nccl(cpu_torch, has_driver=True, multi_rank=False).status == WARN
    failed = check_nccl(cpu_torch, has_driver=True, multi_rank=True)
    assert failed.status == FAIL and "CPU build" in failed.value and "cu124" in failed.advice


def test_nsys_sampling_follows_perf_event_paranoid() -> None:
    assert check_nsys_sampling(replace(EIGHT, perf_event_paranoid=1), NSYS).status == OK
    strict = check_nsys_sampling(replace(EIGHT, perf_event_paranoid=4), NSYS)
    assert strict.status == WARN and "paranoid 4" in strict.value and "echo 2 >" in strict.advice
    assert "default nsys command does neither" in strict.value
    assert check_nsys_sampling(replace(EIGHT, perf_event_paranoid=None), NSYS).status == SKIP
    assert check_nsys_sampling(EIGHT, ToolReading("nsys", None)).status == SKIP
    assert check_nsys_sampling(EIGHT, None).status == SKIP


def test_readers_on_this_machine(tmp_path: Path) -> None:
    (tmp_path / "p").write_text("3\n")
    assert perf_event_paranoid(tmp_path / "p") == 3
    (tmp_path / "bad").write_text("x")
    assert perf_event_paranoid(tmp_path / "bad") is None and perf_event_paranoid(tmp_path / "none") is None
    import torch

    version, reason = nccl_version()
    if torch.version.cuda is None:  # this CPU machine: the reason, not a version
        assert version is None and reason is not None and "CPU build" in reason
    else:
        assert version is not None and version[0].isdigit()
    got = read_dist(has_driver=False, spec_nproc=2)
    assert got.visible_gpus is None and got.spec_nproc == 2 and (got.nccl, got.nccl_reason) == (version, reason)
