"""`perfkit serve-bench --find-capacity`: the answer first, a line per stage; bad options exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.forked_cli import Result, run_perfkit
from tests.helpers.serving_server import running_server

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str, cwd: Path) -> Result:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(cwd / "home"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return run_perfkit(["serve-bench", *args, "--no-store", "--out", str(cwd / "runs")], cwd, env, timeout_s=600)


@pytest.mark.slow
def test_the_answer_leads_and_each_stage_follows(tmp_path: Path) -> None:
    with running_server("--synthetic", "--ttft-ms", "50", "--itl-ms", "10", "--output-tokens", "4",
                        "--max-concurrency", "4") as url:
        done = _bench(url, "--requests", "48", "--input-len", "8", "--output-len", "4",
                      "--warmup", "0", "--slo", "ttft_p90=0.12", "--find-capacity", "--max-stages", "8", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("capacity at the SLO (ttft p90 <= 120 ms): ")
    assert any(line.startswith("  concurrency 1: ") for line in lines[1:])
    if "client-bound" not in lines[0]:
        assert lines[0].split(": ")[1].startswith("4 in flight, proven"), lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "says"), [
    (("--find-capacity",), "--find-capacity searches for the load an SLO holds at: give --slo"),
    (("--find-capacity", "--slo", "ttft_p99=2,tpot_p95=0.1"), "write one quantile for every metric"),
])
def test_bad_capacity_options_are_one_line(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    done = _bench("http://127.0.0.1:9", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()
