"""`perfkit profile` end to end: run directory, record contents, exit codes, Ctrl-C, kill -9."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.core.run_layout import PARTIAL_FILE, RUN_FILE
from tests.helpers.forked_cli import Result, cli_env, run_perfkit

REPO = Path(__file__).resolve().parents[2]

SMALL = """\
name: small
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.05, min_reps: 6, target_rel_ci: 0.05}
profile: {profiled_iters: 1}
workloads:
  - kind: gemm
    name: sq
    m: [32, 64]
    n: 32
    k: 32
    dtypes: [fp32, bf16, tf32]
"""

SLOW = """\
name: slow
device: cpu
cpu_threads: 1
timing: {warmup_s: 0.01, budget_s: 0.4, min_reps: 6, max_reps: 10000000, target_rel_ci: 0.0001}  # each point runs its whole budget
profile: {torch_profiler: false}
workloads:
  - kind: gemm
    m: {start: 16, stop: 400, step: 16}
    n: 32
    k: 32
"""


def _perfkit(*args: str, **kw: object) -> Result:
    """`python -m perfkit ARGS` (a process forked from the test process's fork server)."""
    env = {**cli_env(), "PERFKIT_DB": str(kw.get("db", os.environ["PERFKIT_DB"]))}
    return run_perfkit(list(args), kw.get("cwd", REPO), env)  # type: ignore[arg-type]


@pytest.mark.slow
def test_profile_writes_complete_run(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    db = f"sqlite:///{tmp_path / 'store.db'}"
    proc = _perfkit("profile", str(spec), "--out", str(tmp_path / "runs"), db=db)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path / "runs"
    assert "USDT" not in proc.stderr  # profiler chatter filtered
    assert "sq" in proc.stdout and "skip [1]" in proc.stdout and "[1] " in proc.stdout  # summary + footnote
    assert not (run_dir / PARTIAL_FILE).exists()
    raw = json.loads((run_dir / RUN_FILE).read_text())
    assert raw["schema_version"] == 2 and raw["status"] == "complete"
    assert raw["spec"]["name"] == "small" and len(raw["spec_hash"]) == 16
    env = raw["env"]
    assert env["gpu_available"] is False and env["gpu_reason"]
    assert env["git"]["commit"] and env["git"]["branch"] is not None
    assert env["versions"]["torch"] and env["cpu"]["cores"] >= 1 and env["cpu"]["model"]
    assert env["cpu"]["threads"] >= 1 and env["gpus"] == [] and env["gpus_after"] == [] and env["quick"] is False
    assert env["device"]["type"] == "cpu" and env["roofline"]["device"]["kind"] == "cpu"
    run = load_run(run_dir)
    assert run.counts == {"ok": 4, "failed": 0, "skipped": 2}
    for p in run.points:
        if p.params["dtype"] == "tf32":
            assert p.status == "skipped" and "CUDA" in (p.error or "")
            continue
        assert p.status == "ok"
        assert p.measurement is not None and len(p.measurement.samples_s) >= 6
        assert p.measurement.stop_reason in ("converged", "budget")
        assert p.cost is not None and p.cost.flop == 2 * p.params["m"] * 32 * 32
        assert p.achieved["flop_per_s"] == pytest.approx(p.cost.flop / p.measurement.median_s)
        assert p.numerics is not None and p.numerics.ok
        assert p.trace is not None
        with gzip.open(run_dir / p.trace) as fh:
            trace = json.loads(fh.read())
        names = {e.get("name") for e in trace["traceEvents"]}
        assert p.key in names  # the record_function around each profiled iteration
        assert any(n and n.startswith("aten::") for n in names)
    # post-run: analysis tables beside the traces, and the run in the store
    tables = run.artifacts.analysis
    assert "kernels" in tables and (run_dir / tables["kernels"]).exists()
    from perfkit.store.api import load_stored_run

    stored = load_stored_run(run.run_id, db)
    assert stored.run_id == run.run_id and len(stored.points) == len(run.points)


@pytest.mark.slow
def test_failed_point_exit_3_and_sweep_goes_on(tmp_path: Path) -> None:
    spec = tmp_path / "oom.yaml"
    spec.write_text(SMALL.replace("m: [32, 64]", "m: [32, 1000000000000]").replace(
        "dtypes: [fp32, bf16, tf32]", "dtypes: [fp32]"))
    proc = _perfkit("profile", str(spec), "--out", str(tmp_path / "runs"), "--quiet")
    assert proc.returncode == 3, proc.stderr
    run = load_run(Path(proc.stdout.strip().splitlines()[-1]))
    ok, failed = run.points
    assert ok.status == "ok"
    assert failed.status == "failed"
    assert (failed.error or "").startswith("out of memory during build")
    assert "1 of 2 points failed" in proc.stderr


@pytest.mark.slow
def test_device_cuda_without_gpu_is_bad_input(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    proc = _perfkit("profile", str(spec), "--out", str(tmp_path / "runs"), "--device", "cuda")
    assert proc.returncode == 2
    assert "no CUDA device" in proc.stderr and "--device cpu" in proc.stderr
    assert not (tmp_path / "runs").exists()


def _start_slow(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    spec = tmp_path / "slow.yaml"
    spec.write_text(SLOW)
    out = tmp_path / "runs"
    # SIGINT at its default in the child: a disposition of SIG_IGN inherited from this process
    # (set by a library earlier in the session) would make Python ignore Ctrl-C, as for a
    # background job; that is the caller's choice, not what this test is about
    proc = subprocess.Popen([sys.executable, "-m", "perfkit", "profile", str(spec), "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "OMP_NUM_THREADS": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline:
        partials = list(out.glob(f"*/{PARTIAL_FILE}"))
        if partials and json.loads(partials[0].read_text())["points"]:
            return proc, partials[0].parent
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never recorded a point")


@pytest.mark.slow
def test_ctrl_c_finishes_record_as_interrupted(tmp_path: Path) -> None:
    proc, run_dir = _start_slow(tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    run = load_run(run_dir)
    assert run.status == "interrupted"
    assert 1 <= len(run.points) < 25
    assert all(p.status == "ok" for p in run.points)
    assert not (run_dir / PARTIAL_FILE).exists()
    assert "interrupted" in err


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_finish_record_like_ctrl_c(tmp_path: Path, signum: int, code: int) -> None:
    proc, run_dir = _start_slow(tmp_path)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    run = load_run(run_dir)
    assert run.status == "interrupted" and run.artifacts.interrupted_by == signal.Signals(signum).name
    assert 1 <= len(run.points) < 25 and all(p.status == "ok" for p in run.points)
    assert not (run_dir / PARTIAL_FILE).exists()
    assert f"interrupted ({signal.Signals(signum).name})" in err and "Traceback" not in err


@pytest.mark.slow
def test_killed_run_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    proc, run_dir = _start_slow(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    assert not (run_dir / RUN_FILE).exists()
    partial = json.loads((run_dir / PARTIAL_FILE).read_text())
    assert partial["status"] == "running"
    from perfkit.core.errors import StoreError

    with pytest.raises(StoreError, match=r"did not finish.*perfkit ingest --partial"):
        load_run(run_dir)
    # the points the dead run recorded are recovered into the store
    db = f"sqlite:///{tmp_path / 'store.db'}"
    proc = _perfkit("ingest", "--partial", str(run_dir), db=db)
    assert proc.returncode == 0, proc.stderr
    from perfkit.store.api import load_stored_run

    stored = load_stored_run(run_dir.name, db)
    assert stored.status == "interrupted" and len(stored.points) == len(partial["points"]) >= 1
    assert not (run_dir / RUN_FILE).exists()  # recovering reads; it writes nothing in the run


def test_help_is_fast_and_torch_free() -> None:
    code = ("import sys, time; t=time.perf_counter(); from perfkit.cli import build_parser; "
            "build_parser().format_help(); print('torch' in sys.modules, time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    torch_loaded, seconds = out.stdout.split()
    assert torch_loaded == "False"
    assert float(seconds) < 1.0
