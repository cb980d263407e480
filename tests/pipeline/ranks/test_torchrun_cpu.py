"""Real multi-process runs on the CPU: 2 gloo ranks under torchrun through the `perfkit` CLI.

Slow for a unit test (torchrun and two torch imports per launch, ~20 s on 2 busy cores), so each
test runs one small sweep and checks everything it can on it; examples/collectives-cpu.yaml is
profiled once for the three tests that read it (the run, its collectives table, its roofline).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.analyzers.collectives.analysis import ALL_RANKS, collective_summary
from perfkit.analyzers.loaders.kineto.load import load_traces
from perfkit.core.errors import EXIT_OK, EXIT_POINTS_FAILED
from perfkit.core.record import load_run
from perfkit.core.run_layout import RunDir
from perfkit.pipeline.ranks.worker import TEST_FAULT_ENV
from tests.helpers.forked_cli import run_perfkit

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
pytest.importorskip("torch.distributed")


def _profile(spec: Path, out: Path, env: dict[str, str] | None = None, quiet: bool = True
             ) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(out), "--no-store", "--quick",
           *(["--quiet"] if quiet else [])]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env or {})}
    if not quiet:  # torchrun prints its OMP_NUM_THREADS banner when the variable is unset
        del full_env["OMP_NUM_THREADS"]
    return subprocess.run(cmd, cwd=REPO, env=full_env, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """examples/collectives-cpu.yaml profiled once (2 gloo ranks, --quick, ~30 s) for the tests
    below: the run itself, its collectives table, its link roofline."""
    proc = _profile(REPO / "examples" / "collectives-cpu.yaml", tmp_path_factory.mktemp("example"), quiet=False)
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    return proc, Path(proc.stdout.strip().splitlines()[-1])


def test_cpu_example_two_ranks(example_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, run_dir = example_run
    banner = "Setting OMP_NUM_THREADS environment variable"
    assert banner not in proc.stdout and banner not in proc.stderr  # torchrun's banner: in the log only
    assert banner in RunDir(run_dir).launch_log.read_text()
    assert "perfkit-rank:" not in RunDir(run_dir).launch_log.read_text()  # perfkit's markers are read, not kept
    run = load_run(run_dir)
    assert run.status == "complete" and run.artifacts.launches == 1
    ops = {p.params["op"] for p in run.points}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}
    for p in run.points:
        assert p.status == "ok", (p.key, p.error)
        assert p.numerics is not None and p.numerics.ok and p.numerics.max_abs_err == 0.0
        m = p.measurement
        assert m is not None and m.extra["ranks"] == 2
        size = p.params.get("message_bytes", p.params["size_bytes"])
        assert p.metrics["algbw_bytes_per_s"] == pytest.approx(size / m.median_s)
        assert p.metrics["busbw_bytes_per_s"] == pytest.approx(p.metrics["algbw_bytes_per_s"] * p.metrics["bus_factor"])
        # nccl-tests timing (the default): each sample is the mean over ranks of 20 back-to-back calls,
        # the max over ranks beside it with its own busbw
        assert m.calls_per_sample == 20 and m.warmup_reps == 5 and p.metrics["rank_timing"] == "nccl_tests"
        # per sample the max over ranks is >= the mean, so its median is >= the mean's median
        assert p.metrics["max_rank_time_s"] >= m.median_s * (1 - 1e-9)
        assert p.metrics["busbw_max_rank_bytes_per_s"] <= p.metrics["busbw_bytes_per_s"] * (1 + 1e-9)
        traces = p.metrics["rank_traces"]
        assert p.trace == traces[0] and traces[1].endswith(".rank1.json.gz")
        for rank, rel in enumerate(traces):
            with gzip.open(run_dir / rel, "rt") as fh:
                assert json.load(fh)["distributedInfo"]["rank"] == rank
    assert run.points[0].metrics["bus_factor"] == pytest.approx(1.0)  # all_reduce on 2 ranks: 2(n-1)/n
    first = run.points[0].metrics["rank_traces"]
    out = run_perfkit(["analyze", *(str(run_dir / t) for t in first), "--format", "json", "--only", "temporal"],
                      REPO, {**os.environ, "PYTHONPATH": str(REPO)}, timeout_s=120)
    assert out.returncode == 0, out.stderr
    assert sorted(row["rank"] for row in json.loads(out.stdout)["temporal"]) == [0, 1]


GLOO_NAME = {"reduce_scatter": "all_reduce"}  # gloo runs reduce_scatter as an all_reduce of the input


def test_gloo_collectives_table_sizes_and_counts(example_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """The collectives table of each point's two rank traces: sizes, counts, algbw."""
    run_dir = example_run[1]
    run = load_run(run_dir)
    for p in run.points:
        table = collective_summary(load_traces([run_dir / t for t in p.metrics["rank_traces"]]))
        op = p.params["op"]
        size = p.params.get("message_bytes", p.params["size_bytes"])
        assert sorted(table["rank"]) == [ALL_RANKS, 0, 1], p.key
        assert set(table["collective"]) == {GLOO_NAME.get(op, op)}
        assert set(table["message_bytes"]) == {size}, p.key
        assert set(table["dtype"]) == {p.params["dtype"]} and set(table["timed_on"]) == {"cpu"}
        assert set(table["group_size"]) == {2}
        per_rank = table[table["rank"] >= 0]
        assert per_rank["count"].tolist() == [1, 1]  # profiled_iters: 1 timed call per rank
        assert (per_rank["algbw_bytes_per_s"] == size / (per_rank["p50_ns"] * 1e-9)).all()


def test_real_cpu_collectives_run_gets_the_cpu_note(example_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """`perfkit roofline` of the gloo run: busbw alone, no link roof, the CPU note."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    roof = run_perfkit(["roofline", str(example_run[1]), "--no-figure"], REPO, env, timeout_s=120)
    assert roof.returncode == 0, roof.stderr[-3000:]
    out = roof.stdout
    assert "collectives vs link (21; busbw against the per-direction link; no link roof):" in out
    flat = " ".join(out.split())  # notes wrap to the terminal's width
    assert "note: CPU: the ranks exchange data through shared memory (gloo): no link roof, busbw shown alone" in flat
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("collectives/") and ln.split()[-1] in
            ("latency", "bandwidth")]
    assert len(rows) == 21 and all(r[-2] == "-" for r in rows)  # no % of link without a link
    assert {r[-1] for r in rows if "size_bytes=8," in r[0] or r[0].endswith("size_bytes=8")} == {"latency"}


FAULT_SPEC = """\
name: faults
device: cpu
cpu_threads: 1
launch: {nproc: 2, point_timeout_s: 5}
timing: {warmup_s: 0.0, budget_s: 0.02, min_reps: 5, max_reps: 20, target_rel_ci: 0.5}
profile: {torch_profiler: false}
workloads:
  - kind: collectives
    ops: [all_reduce]
    size_bytes: [8, 16, 32, 64]
"""


def test_a_killed_and_a_hung_rank_fail_their_points_and_the_sweep_goes_on(tmp_path: Path) -> None:
    spec = tmp_path / "faults.yaml"
    spec.write_text(FAULT_SPEC)
    proc = _profile(spec, tmp_path / "runs", {TEST_FAULT_ENV: "kill:1:1,hang:1:2"})
    assert proc.returncode == EXIT_POINTS_FAILED, proc.stderr[-3000:]
    run = load_run(Path(proc.stdout.strip().splitlines()[-1]))
    assert [p.status for p in run.points] == ["ok", "failed", "failed", "ok"]
    assert run.points[1].error == "rank 1 died (killed by SIGKILL)"
    assert run.points[1].metrics["failed_rank"] == 1
    assert run.points[2].error is not None and run.points[2].error.startswith("rank 1 hung: point still running after 5 s")
    assert run.status == "complete" and run.artifacts.launches == 3
