"""Autotuning sweeps: best configuration per shape, CI verdicts, the tables, end to end on CPU."""

from __future__ import annotations

import csv
import json
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfkit.cli import main
from perfkit.core.artifacts import TuneArtifacts
from perfkit.core.env import Env
from perfkit.core.measurement import Measurement
from perfkit.core.record import PointResult, Run, load_run
from perfkit.core.tune_result import triton_config, tune_document
from perfkit.core.units import fmt_ratio, fmt_time
from perfkit.pipeline.tune_report import csv_rows
from perfkit.workloads.base import point_key
from perfkit.workloads.tune import autotune_snippets, pick_best, tune_results

TUNED = {"k": (("n",), ("BLOCK_SIZE", "num_warps"))}


def meas(center_s: float, spread: float, n: int = 60, seed: int = 0) -> Measurement:
    rng = np.random.default_rng(seed)
    samples = center_s * (1.0 + spread * rng.uniform(-1, 1, size=n))
    return Measurement(samples_s=tuple(float(x) for x in samples), warmup_reps=1,
                       stop_reason="converged", timer="perf_counter", target_rel_ci=0.01)


def point(n: int, block: int, warps: int, m: Measurement | None, status: str = "ok",
          error: str | None = None, metrics: dict[str, Any] | None = None) -> PointResult:
    params = {"n": n, "BLOCK_SIZE": block, "num_warps": warps}
    return PointResult(key=point_key("custom", "k", params), kind="custom", workload="k",
                       params=params, status=status, error=error, measurement=m,
                       metrics=metrics or {})


def run_of(*points: PointResult) -> Run:
    return Run(run_id="r1", created="2026-01-01T00:00:00+00:00", status="complete", spec={},
               spec_hash="h", spec_path="s.yaml", device="cuda", env=Env(), points=points)


def test_best_per_shape_distinguishable_and_failures_kept() -> None:
    run = run_of(
        point(1024, 256, 4, meas(20e-6, 0.02, seed=1)),
        point(1024, 512, 4, meas(10e-6, 0.02, seed=2)),   # best for n=1024, clearly
        point(1024, 1024, 8, None, status="failed", error="run failed: CompilationError: out of resources"),
        point(4096, 1024, 4, meas(30.0e-6, 0.05, seed=3)),  # best for n=4096 ...
        point(4096, 2048, 8, meas(30.3e-6, 0.05, seed=4)),  # ... but within noise of this one
        point(1024, 64, 2, meas(50e-6, 0.02, seed=5)),      # same shape later in the run
    )
    first, second = tune_results(run, TUNED)
    assert first.shape == {"n": 1024} and second.shape == {"n": 4096}
    assert first.best is not None and first.best.config == {"BLOCK_SIZE": 512, "num_warps": 4}
    assert first.runner_up is not None and first.runner_up.config == {"BLOCK_SIZE": 256, "num_warps": 4}
    assert first.distinguishable is True
    assert first.speedup_vs_runner_up == pytest.approx(2.0, rel=0.03)
    assert (first.timed, first.failed) == (3, 1)
    failed = [c for c in first.configs if c.status == "failed"]
    assert failed[0].error == "run failed: CompilationError: out of resources"
    assert second.best is not None and second.best.config["BLOCK_SIZE"] in (1024, 2048)
    assert second.distinguishable is False
    assert "not distinguishable" in second.note


def test_one_config_too_few_samples_and_nothing_timed() -> None:
    one = pick_best("k", {"n": 1}, [tune_results(run_of(point(1, 32, 1, meas(1e-6, 0.01))), TUNED)[0].configs[0]])
    assert one.best is not None and one.runner_up is None and one.distinguishable is None
    assert "only one configuration" in one.note
    few = tune_results(run_of(point(1, 32, 1, meas(1e-6, 0.01, n=4)), point(1, 64, 1, meas(2e-6, 0.01, n=4))), TUNED)[0]
    assert few.best is not None and few.best.config["BLOCK_SIZE"] == 32
    assert few.distinguishable is None and "too few samples" in few.note
    skipped = tune_results(run_of(
        point(1, 32, 1, None, metrics={"timing_skipped": "Triton interpreter on cpu"}),
        point(1, 64, 1, None, status="failed", error="numerics: relative error 0.5 > tolerance 0.01",
              metrics={"timing_skipped": "Triton interpreter on cpu"}),
    ), TUNED)[0]
    assert skipped.best is None
    assert skipped.note == "no configuration timed (1 of 2 passed numerics): timing skipped"
    assert skipped.configs[0].timing_skipped == "Triton interpreter on cpu"


def test_triton_config_text() -> None:
    cfg = {"BLOCK_SIZE": 1024, "GROUP": 8, "num_stages": 2, "num_warps": 4}
    assert triton_config(cfg) == "triton.Config({'BLOCK_SIZE': 1024, 'GROUP': 8}, num_warps=4, num_stages=2)"
    assert triton_config({"BLOCK_SIZE": 64}) == "triton.Config({'BLOCK_SIZE': 64})"


def test_tables_keep_parameter_columns_apart_from_statistics() -> None:
    run = run_of(point(1024, 256, 4, meas(20e-6, 0.02)), point(1024, 512, 4, meas(10e-6, 0.02, seed=9)))
    results = tune_results(run, TUNED)
    cols, rows = csv_rows(results)
    assert cols[:4] == ["workload", "n", "BLOCK_SIZE", "num_warps"]  # `n` the shape, `samples` the count
    assert rows[0]["n"] == 1024 and rows[0]["samples"] == 60 and rows[0]["BLOCK_SIZE"] == 512
    assert rows[0]["triton_config"] == "triton.Config({'BLOCK_SIZE': 512}, num_warps=4)"
    data = tune_document(results, run_id=run.run_id, device=run.device, autotune=autotune_snippets(results, TUNED))
    assert data["autotune"]["k"] == {"key": ["n"], "configs": ["triton.Config({'BLOCK_SIZE': 512}, num_warps=4)"]}
    assert len(data["shapes"][0]["configs"]) == 2


CHUNKED = '''
import torch


def chunked_sum(x, CHUNK):
    total = x.new_zeros(())
    for start in range(0, x.numel(), CHUNK):
        total = total + x[start:start + CHUNK].sum()
    return total


def make(n, CHUNK, device):
    if CHUNK == 3:
        raise RuntimeError("CHUNK=3 does not compile")
    x = torch.randn(n, device=device, dtype=torch.float64)
    if CHUNK == 5:  # a configuration with a bug: drops the last element
        return (lambda x: chunked_sum(x[:-1], CHUNK)), (x,)
    return chunked_sum, (x,), {"CHUNK": CHUNK}


def ref(x, CHUNK=None):
    return x.sum()
'''


@pytest.fixture(autouse=True)
def _clean_triton_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.mark.slow
def test_tune_sweep_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    name = f"tune_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(CHUNKED)
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "tune.yaml"
    spec.write_text(textwrap.dedent(f"""\
        name: tune-test
        device: cpu
        timing: {{warmup_s: 0.0, budget_s: 0.1, min_reps: 20, target_rel_ci: 0.02}}
        profile: {{torch_profiler: false, nvtx: false}}
        workloads:
          - kind: custom
            name: chunked
            entry: {name}:make
            reference: {name}:ref
            params: {{n: [512, 2048]}}
            tune:
              axes: {{CHUNK: [3, 5, 8, 2048]}}
              where: CHUNK <= n
            cost: {{flop: n, bytes: 8*n}}
    """))
    out = tmp_path / "runs"
    code = main(["profile", str(spec), "--out", str(out)])
    assert code == 3  # failing configurations are recorded, not fatal
    (run_dir,) = list(out.iterdir())
    run = load_run(run_dir)
    assert len(run.points) == 3 + 4  # n=512 drops CHUNK=2048
    assert run.artifacts.tune == TuneArtifacts(json="tune.json", csv="tune.csv")
    data = json.loads((run_dir / "tune.json").read_text())
    shapes = {s["shape"]["n"]: s for s in data["shapes"]}
    for n, best_chunk in ((512, 8), (2048, 2048)):
        s = shapes[n]
        assert s["best"]["config"] == {"CHUNK": best_chunk}
        assert s["configs_failed"] == 2
        statuses = {c["config"]["CHUNK"]: c for c in s["configs"]}
        assert "CHUNK=3 does not compile" in statuses[3]["error"]
        assert statuses[5]["status"] == "failed" and "numerics" in statuses[5]["error"]
    big = shapes[2048]
    assert big["runner_up"]["config"] == {"CHUNK": 8}
    assert big["distinguishable"] is True  # 1 chunk vs 256 chunks of Python loop
    assert big["speedup_vs_runner_up"] > 5
    assert big["best"]["ci_high_s"] < big["runner_up"]["ci_low_s"]
    assert data["autotune"]["chunked"]["configs"] == ["triton.Config({'CHUNK': 8})", "triton.Config({'CHUNK': 2048})"]
    with (run_dir / "tune.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["n"], r["CHUNK"], r["distinguishable"]) for r in rows][1] == ("2048", "2048", "True")
    printed = capsys.readouterr().out
    assert "tune: best configuration per shape" in printed
    assert "@triton.autotune(configs=[triton.Config({'CHUNK': 8}), triton.Config({'CHUNK': 2048})], key=['n'])" in printed
    assert main(["report", str(run_dir), "--format", "md", "--no-kernels"]) == 0
    report = capsys.readouterr().out
    row = next(line for line in report.splitlines() if line.startswith("| chunked | n=2048 |"))
    assert f"| CHUNK=2048 | {fmt_time(big['best']['median_s'])} |" in row
    assert f"| {fmt_ratio(big['speedup_vs_runner_up'])} | yes |" in row
