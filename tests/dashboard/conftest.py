"""A seeded results store for the dashboard tests, built once per session.

One real `perfkit profile` run (a tiny CPU GEMM sweep) is the template; the store then holds
copies of it filed under a history of 20 commits on two GPUs (the real CPU, and the same run
relabelled as an H100 at 1/20 of the time). The timing samples are drawn around the real run's
median per point (run level: 2% sigma; samples: 3% sigma, 20 of them) so that the statistics
the tests check are known whatever this machine's noise was; a known +30% regression of one point from commit 11 on the CPU series, plus three runs on a
feature branch. The two newest H100 runs carry GPU kernel traces (Kineto format), one kernel
named with `<script>` in it. Runs are stored with the store's own `store_run`.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.once_per_run import once_per_run
from tests.helpers.tiny_run import profile_tiny

COMMITS = 20
STEP_AT = 11  # first commit of the regression
STEP = 1.30
RUN_JITTER = 0.02  # relative sigma of a run's level around the template run's median
SAMPLE_NOISE = 0.03  # relative sigma of the samples around their run's level
SAMPLES = 20
H100 = "NVIDIA H100 80GB HBM3"
EVIL_KERNEL = 'void gemm<float, 128>(float const*) </script><script>alert("pwned")</script>'


@dataclass(frozen=True)
class Seeded:
    db: Path
    url: str
    runs_root: Path
    cpu_gpu: str  # the CPU's label in the store
    cpu_runs: list[str]  # main branch, commit order
    h100_runs: list[str]
    feature_runs: list[str]
    regressed_key: str  # the point that got 30% slower at commit STEP_AT on the CPU series
    steady_key: str
    h100: str = H100
    evil_kernel: str = EVIL_KERNEL
    step_at: int = STEP_AT

    def commit(self, i: int) -> str:
        return commit_id(i)


def commit_id(i: int, branch: str = "main") -> str:
    return f"{'c' if branch == 'main' else 'f'}{i:02d}" + "abcdef0123456789" * 2


def write_kineto_trace(path: Path, names: list[str], scale: float = 1.0, repeats: int = 30) -> Path:
    """A Kineto trace of GPU kernels launched from one CPU thread (kernel k runs (k+1)*scale us)."""
    import gzip

    events: list[dict[str, object]] = []
    ts, corr = 1_000.0, 1
    for _ in range(repeats):
        for k, name in enumerate(names):
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": ts, "dur": 4.0, "args": {"correlation": corr, "External id": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts + 6.0,
                           "dur": float(k + 1) * scale, "args": {"correlation": corr, "stream": 7, "device": 0}})
            ts += 20.0
            corr += 1
    with gzip.open(path, "wt") as fh:
        json.dump({"schemaVersion": 1, "traceEvents": events}, fh)
    return path


def derive(template: dict, run_id: str, created: datetime, commit: str, branch: str, gpu: str | None,
           scale: dict[str, float], rng: np.random.Generator) -> dict:
    record = copy.deepcopy(template)
    record["run_id"] = run_id
    record["created"] = created.isoformat()
    record["finished"] = (created + timedelta(seconds=20)).isoformat()
    record["env"]["git"] = {"commit": commit, "branch": branch, "dirty": False, "repo": "seeded"}
    if gpu is not None:
        record["device"] = "cuda"
        record["env"]["device"] = {"name": gpu}
        record["env"]["gpus"] = [{"name": gpu, "driver": "550.54.15"}]
        record["env"].pop("roofline", None)  # the profile's roofline snapshot names the real CPU
    for p in record["points"]:
        p["trace"] = None
        m = p.get("measurement")
        if p["status"] == "ok" and m:
            level = float(np.median(m["samples_s"])) * scale.get(p["key"], 1.0)
            level *= float(np.exp(rng.normal(0.0, RUN_JITTER)))  # run-to-run: one factor per run and point
            m["samples_s"] = [float(x) for x in level * np.exp(rng.normal(0.0, SAMPLE_NOISE, SAMPLES))]
            m.pop("stats", None)
    return record


def build_seeded(tmp: Path) -> Seeded:
    from perfkit.analyzers.for_run import write_run_tables
    from perfkit.store.api import store_run
    from perfkit.store.url import sqlite_url

    real = profile_tiny(tmp)
    template = json.loads((real / "run.json").read_text())
    ok = [p["key"] for p in template["points"] if p["status"] == "ok"]
    regressed, steady = ok[1], ok[0]
    root = tmp / "runs"
    rng = np.random.default_rng(7)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    made: dict[str, list[str]] = {"cpu": [], "h100": [], "feature": []}
    series = [("cpu", None, "main", 1.0), ("h100", H100, "main", 0.05)]
    for i in range(1, COMMITS + 1):
        for name, gpu, branch, speed in series:
            step = STEP if (name == "cpu" and i >= STEP_AT) else 1.0
            scale = {k: speed * (step if k == regressed else 1.0) for k in ok}
            run_id = f"seed-{name}-{i:02d}"
            made[name].append(run_id)
            created = t0 + timedelta(hours=i, minutes=5 if gpu else 0)
            record = derive(template, run_id, created, commit_id(i), branch, gpu, scale, rng)
            (root / run_id).mkdir(parents=True)
            (root / run_id / "run.json").write_text(json.dumps(record))
            if (real / "analysis").is_dir():  # the profile's analysis tables, which run.json lists
                shutil.copytree(real / "analysis", root / run_id / "analysis")
    for i in range(1, 4):
        run_id = f"seed-feature-{i:02d}"
        made["feature"].append(run_id)
        record = derive(template, run_id, t0 + timedelta(hours=COMMITS + i), commit_id(i, "feature"),
                        "feature/faster", None, {}, rng)
        (root / run_id).mkdir(parents=True)
        (root / run_id / "run.json").write_text(json.dumps(record))
        if (real / "analysis").is_dir():
            shutil.copytree(real / "analysis", root / run_id / "analysis")
    # GPU kernel traces on the two newest H100 runs (the newest one 50% slower per kernel)
    for run_id, kernel_scale in ((made["h100"][-2], 1.0), (made["h100"][-1], 1.5)):
        record = json.loads((root / run_id / "run.json").read_text())
        (root / run_id / "traces").mkdir()
        traces = []
        for j, p in enumerate(record["points"]):
            if p["status"] == "ok":
                p["trace"] = f"traces/{j:04d}.json.gz"
                traces.append(write_kineto_trace(root / run_id / p["trace"], [EVIL_KERNEL, "ampere_sgemm_128x64_nn"],
                                                 kernel_scale))
        shutil.rmtree(root / run_id / "analysis", ignore_errors=True)
        record["artifacts"]["analysis"] = write_run_tables(root / run_id, traces)  # as `perfkit analyze` does
        (root / run_id / "run.json").write_text(json.dumps(record))
    # the real CPU run's own traces stay with the newest CPU run (CPU ops only)
    shutil.copytree(real / "traces", root / made["cpu"][-1] / "traces")
    newest = json.loads((root / made["cpu"][-1] / "run.json").read_text())
    for p, q in zip(newest["points"], template["points"], strict=True):
        p["trace"] = q["trace"]
    (root / made["cpu"][-1] / "run.json").write_text(json.dumps(newest))
    db = tmp / "seeded.db"
    url = sqlite_url(db)
    for run_id in sorted(made["cpu"] + made["h100"] + made["feature"]):
        store_run(root / run_id, url)
    cpu_label = str(template["env"]["cpu"].get("model") or "cpu")
    return Seeded(db, url, root, cpu_label, made["cpu"], made["h100"], made["feature"], regressed, steady)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return build_seeded(tmp_path_factory.mktemp("seeded"))


@dataclass(frozen=True)
class DemoStore:
    demo: Any  # dashboard.demo.Demo
    info: dict  # its demo.json: commits (sha, message, run_id), change_at, runs, gpu_runs
    gpu_run: str  # the run copied into the demo's results folder

    @property
    def change_sha(self) -> str:
        return str(self.info["commits"][self.info["change_at"] - 1]["sha"])

    @property
    def before_sha(self) -> str:
        return str(self.info["commits"][self.info["change_at"] - 2]["sha"])


def build_demo(root: Path, seeded: Seeded) -> DemoStore:
    from perfkit.dashboard.demo import build

    results = root / "results"
    shutil.copytree(seeded.runs_root / seeded.h100_runs[-1], results / "h100" / seeded.h100_runs[-1])
    with pytest.MonkeyPatch.context() as mp:  # the profile subprocesses must not read a developer's home
        mp.setenv("PERFKIT_HOME", str(root / "perfkit-home"))
        mp.setenv("PERFKIT_DB", str(root / "no-store.db"))
        demo = build(root / "demo", results=results, progress=lambda _: None)
    info = json.loads((root / "demo" / "demo.json").read_text())
    return DemoStore(demo, info, seeded.h100_runs[-1])


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory, seeded: Seeded) -> DemoStore:
    """The real demo (dashboard.demo.build, default commits: twelve real profile runs), built once
    per test run (by the first xdist worker that asks: tests/helpers/once_per_run.py), with one
    seeded H100 run standing in for benchmarks/results/."""
    def make(root: Path) -> tuple[Any, dict, str]:  # plain values: the pickle names no conftest class
        built = build_demo(root, seeded)
        return built.demo, built.info, built.gpu_run

    return DemoStore(*once_per_run(tmp_path_factory, "demo", make))


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads a developer's ./perfkit.db, calibrations or demo label."""
    monkeypatch.setenv("PERFKIT_DB", str(tmp_path / "no-store.db"))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "perfkit-home"))
    monkeypatch.delenv("PERFKIT_DASHBOARD_DEMO", raising=False)
    monkeypatch.delenv("PERFKIT_RUNS", raising=False)
