"""One location everywhere: the same point's median is the same text in `perfkit profile`'s
table, compare (table, JSON), gate (Markdown, JUnit, JSON) and report (HTML, Markdown), all run
through the CLI on two real CPU runs of one small spec."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perfkit.core.record import load_run
from perfkit.core.units import fmt_time
from tests.helpers.forked_cli import Result, run_perfkit

REPO = Path(__file__).resolve().parents[2]
SPEC = """\
name: one-point
device: cpu
seed: 0
cpu_threads: 1
timing: {warmup_s: 0.005, budget_s: 0.04, min_reps: 12, target_rel_ci: 0.05}
profile: {torch_profiler: false, nvtx: false}
workloads:
  - kind: gemm
    name: sq
    m: [32, 48]
    n: 64
    k: 64
    dtypes: [fp32]
"""


def perfkit(*args: str, home: Path, check: bool = True) -> Result:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PERFKIT_HOME": str(home), "PYTHONPATH": str(REPO),
           "COLUMNS": "120"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    proc = run_perfkit(list(args), home, env)
    if check:
        assert proc.returncode in (0, 1), proc.stderr
    return proc


@pytest.mark.slow
def test_a_points_median_is_the_same_text_in_every_view(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    runs, tables = [], []
    for _ in range(2):
        proc = perfkit("profile", str(spec), "--out", str(tmp_path / "runs"), "--no-store", "--repo", str(REPO),
                       home=tmp_path)
        runs.append(Path(proc.stdout.strip().splitlines()[-1]))
        tables.append(proc.stdout)
    base, cand = runs
    medians = [[fmt_time(p.measurement.median_s) for p in load_run(r).points] for r in runs]
    for table, texts in zip(tables, medians, strict=True):
        assert all(t in table for t in texts), (texts, table)  # profile's table

    views = {
        "compare": perfkit("compare", str(base), str(cand), home=tmp_path).stdout,
        "gate md": perfkit("gate", "--baseline", str(base), "--candidate", str(cand), "--format", "md",
                           "--junit", str(tmp_path / "gate.xml"), "--no-step-summary", home=tmp_path).stdout,
        "report md": perfkit("report", str(cand), "--vs", str(base), "--format", "md", "--no-kernels",
                             home=tmp_path).stdout,
    }
    perfkit("report", str(cand), "--vs", str(base), "--out", str(tmp_path / "r.html"), "--no-kernels", home=tmp_path)
    views["report html"] = (tmp_path / "r.html").read_text()
    views["junit"] = (tmp_path / "gate.xml").read_text()
    for name, text in views.items():
        for b, c in zip(*medians, strict=True):
            assert b in text and c in text, (name, b, c, text)
    assert "(test interval)" in views["junit"] and "medians of the raw samples" in views["gate md"]

    for cmd in (["compare", str(base), str(cand)], ["gate", "--baseline", str(base), "--candidate", str(cand),
                                                    "--no-step-summary"]):
        out = json.loads(perfkit(*cmd, "--format", "json", home=tmp_path).stdout)
        by_point = {r["point"]: r for r in out["rows"]}
        assert len(by_point) == 2  # one row per measurement (time, flop/s, bytes/s are one)
        for i, p in enumerate(load_run(base).points):
            row = by_point[p.key]
            assert (row["baseline_text"], row["candidate_text"]) == (medians[0][i], medians[1][i])
            assert row["baseline"] == p.measurement.median_s
