"""The nccl-tests timer (perfkit.pipeline.ranks.nccl_timer) on 2 real gloo ranks on the CPU: per-call
time is the mean of back-to-back calls, the reported sample the mean over ranks, the max beside it;
and the pure merge rule."""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from perfkit.pipeline.ranks.nccl_timer import SAMPLE_RULE, merge_ranks

pytest.importorskip("torch.distributed")


def test_merge_is_the_mean_over_ranks_with_the_max_beside_it() -> None:
    means, maxes = merge_ranks([[1.0, 2.0, 3.0], [3.0, 2.0, 5.0]])
    assert means == [2.0, 2.0, 4.0] and maxes == [3.0, 2.0, 5.0]
    with pytest.raises(ValueError):
        merge_ranks([[1.0], [1.0, 2.0]])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, port: int, out: str, mode: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    dist.init_process_group("gloo", rank=rank, world_size=2)
    from perfkit.core.timing import TimingConfig
    from perfkit.pipeline.ranks.nccl_timer import time_back_to_back

    config = TimingConfig(warmup_s=0.0, budget_s=0.2, min_reps=5, max_reps=8, target_rel_ci=0.0)
    calls = [0]
    if mode == "sleep":  # rank 1 is three times slower per call: no collective, so no coupling
        per_call_s = 0.002 * (1 + 2 * rank)

        def fn() -> None:
            calls[0] += 1
            time.sleep(per_call_s)
    else:
        t = torch.ones(256)

        def fn() -> None:
            calls[0] += 1
            dist.all_reduce(t)
    timing = time_back_to_back(fn, "cpu", config, None, iters=4, warmup_iters=3)
    m = timing.merged
    Path(out).joinpath(f"rank{rank}.txt").write_text(repr({
        "samples": list(m.samples_s), "calls": calls[0], "calls_per_sample": m.calls_per_sample,
        "warmup": m.warmup_reps, "extra": m.extra, "per_rank": timing.per_rank_s, "stop": m.stop_reason}))
    dist.destroy_process_group()


def _run(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    # spawned ranks import this module by its name (tests.multigpu...): the repository root must be
    # on the path they inherit (pytest's importlib mode does not put it there)
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    ctx = mp.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, port, str(tmp_path), mode)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    import ast

    return [ast.literal_eval((tmp_path / f"rank{r}.txt").read_text()) for r in range(2)]


@pytest.mark.slow
def test_back_to_back_calls_mean_over_ranks_and_max_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r0, r1 = _run(tmp_path, "sleep", monkeypatch)
    assert r0["samples"] == r1["samples"] and r0["per_rank"] == r1["per_rank"]  # one decision for all ranks
    n = len(r0["samples"])
    assert 5 <= n <= 8 and r0["stop"] == "max_reps"
    # every rank made the same calls: 3 warm-up, then iters = 4 per sample
    assert r0["calls"] == r1["calls"] == 3 + 4 * n and r0["calls_per_sample"] == 4 and r0["warmup"] == 3
    fast, slow = r0["per_rank"]
    assert min(fast) >= 0.002 and min(slow) >= 0.006  # per call, not per sample of 4 calls
    for i, s in enumerate(r0["samples"]):
        assert s == pytest.approx((fast[i] + slow[i]) / 2)  # the mean over ranks
    extra = r0["extra"]
    assert extra["sample_rule"] == SAMPLE_RULE and extra["ranks"] == 2 and extra["rank_timing"] == "nccl_tests"
    assert extra["max_over_ranks_median_s"] >= 0.006  # the slow rank's time per call
    assert extra["max_over_ranks_median_s"] > sorted(r0["samples"])[n // 2]  # above the reported mean


@pytest.mark.slow
def test_a_real_gloo_all_reduce_times_alike_on_both_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r0, r1 = _run(tmp_path, "all_reduce", monkeypatch)
    assert r0["calls"] == r1["calls"] and r0["samples"] == r1["samples"]
    assert all(s > 0 for s in r0["samples"])


@pytest.mark.slow
def test_a_spec_asking_for_lockstep_gets_the_barrier_per_call_timer(tmp_path: Path) -> None:
    import subprocess
    import sys

    from perfkit.core.record import load_run

    repo = Path(__file__).resolve().parents[3]
    spec = tmp_path / "lock.yaml"
    spec.write_text("name: lock\ndevice: cpu\ncpu_threads: 1\nlaunch: {nproc: 2, point_timeout_s: 60}\n"
                    "timing: {warmup_s: 0.01, budget_s: 0.05, min_reps: 5, max_reps: 20}\n"
                    "profile: {torch_profiler: false}\n"
                    "workloads:\n  - kind: collectives\n    ops: [all_reduce]\n    size_bytes: [1024]\n"
                    "    rank_timing: lockstep\n")
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(tmp_path / "runs"),
                           "--no-store", "--quiet"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (point,) = load_run(Path(proc.stdout.strip().splitlines()[-1])).points
    m = point.measurement
    assert point.status == "ok" and m is not None and m.calls_per_sample == 1
    assert m.extra["sample_rule"] == "max over ranks of each lock-step sample"
    assert point.metrics["rank_timing"] == "lockstep" and "max_rank_time_s" not in point.metrics
    # each merged sample is the slowest rank's, so its median is at least every rank's own
    assert m.median_s >= max(point.metrics["rank0_median_s"], point.metrics["rank1_median_s"]) * (1 - 1e-9)
