"""The valid inputs benchmarks/hostile_fuzz.py damages, and the command each goes through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.tiny_run import TINY_SPEC, profile_tiny

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PERFKIT_SHARED_BENCH", REPO.parent / "shared" / "bench"))  # the traces of /work/shared
SERVING = REPO / "tests" / "data" / "serving"
QUICK_SPEC = TINY_SPEC.replace("m: [32, 64]", "m: 16").replace("dtypes: [fp32, tf32]", "dtypes: [fp32]")
CSV = ("commit,metric,value,unit,direction,gpu,timestamp\n"
       "c1,gemm:time_s,0.001,s,lower,cpu,1700000000\nc1,gemm:time_s,0.0011,s,lower,cpu,1700000000\n")
POLICY = """defaults:
  min_effect: 0.01
  max_p: 0.05
  noise_limit: 0.05
  assumed_run_spread: 0.02
  assumed_spread_factor: 1.5
  direction: lower
correction: bh
fail_on: [regressed, inconclusive]
metrics:
  - match: "*:time_s"
    min_effect: 0.02
    max_p: 0.01
    noise_limit: 0.1
    assumed_run_spread: 0.01
    assumed_spread_factor: 2.0
    direction: lower
  - match: "*:bytes_per_s"
    ignore: true
"""  # every key a gate policy has (perfkit/regression/gate/policy.py)
PYTEST_BENCHMARK = {
    "machine_info": {"cpu": {"brand_raw": "Fuzz CPU"}, "node": "host"},
    "commit_info": {"id": "abc123", "branch": "main", "time": "2026-01-01T00:00:00"},
    "benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "group": None, "params": None,
                    "stats": {"data": [0.1, 0.11, 0.12], "median": 0.11, "mean": 0.11, "rounds": 3}}],
    "datetime": "2026-01-01T00:00:00", "version": "4.0.0",
}
PROFILE_TIMEOUT_S = 120.0  # kernels-cpu.yaml --quick takes ~10 s on an idle core
REPLAY = "0.0\n0.01\n0.02\n"
DATASET = [{"conversations": [{"from": "human", "value": "hello there"}, {"from": "gpt", "value": "hi"}]}] * 3


@dataclass(frozen=True)
class Target:
    name: str  # COMMAND:INPUT
    kind: str  # json | jsonl | yaml | csv | bytes: which structural mutations apply
    prepare: Callable[[Path], Path]  # case folder -> the file to damage
    argv: Callable[[Path, Path], list[str]]  # case folder, damaged file -> the command line
    ok_codes: tuple[int, ...] = field(default=())
    names_file: bool = True
    timeout_s: float | None = None  # a valid spec profiles for real: longer than a parse
    env: Callable[[Path], dict[str, str]] | None = None  # case folder -> variables over the fuzzer's


def _copy(src: Path, name: str | None = None) -> Callable[[Path], Path]:
    def prepare(case: Path) -> Path:
        dst = case / (name or src.name)
        shutil.copyfile(src, dst)
        return dst
    return prepare


def _run_copy(src: Path, record: str) -> Callable[[Path], Path]:
    """A copy of the tiny run (hard links but for the record, which the mutation rewrites)."""
    def prepare(case: Path) -> Path:
        run = case / src.name
        shutil.copytree(src, run, copy_function=os.link)
        (run / "run.json").unlink()
        shutil.copyfile(src / "run.json", run / record)
        return run / record
    return prepare


def _perfkit(*args: str, cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "perfkit", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"perfkit {' '.join(args)}: {proc.stderr[-2000:]}")


def _second_run(run: Path) -> Path:
    """The tiny run again under another run id: a baseline for gate and compare."""
    record = json.loads((run / "run.json").read_text())
    record["run_id"] = run.name[:-6] + "0f0f0f"
    other = run.parent / record["run_id"]
    shutil.copytree(run, other)
    (other / "run.json").write_text(json.dumps(record))
    return other


def assets(work: Path) -> dict[str, Path]:
    """The valid inputs, made once: a tiny real run, a store holding it, small files of each format."""
    run = profile_tiny(work)
    files = {"run": run, "store": work / "store.db", "spec": work / "tiny.yaml", "policy": work / "gate.yaml",
             "csv": work / "results.csv", "pytest": work / "pytest-benchmark.json", "replay": work / "replay.txt",
             "dataset": work / "sharegpt.json"}
    files["run2"] = _second_run(run)
    for stored in (run, files["run2"]):
        _perfkit("ingest", str(stored), "--db", f"sqlite:///{files['store']}", cwd=work)
    files["spec"].write_text(QUICK_SPEC)
    files["policy"].write_text(POLICY)
    files["csv"].write_text(CSV)
    files["pytest"].write_text(json.dumps(PYTEST_BENCHMARK))
    files["replay"].write_text(REPLAY)
    files["dataset"].write_text(json.dumps(DATASET))
    return files


def _fresh(case: Path) -> str:
    return f"sqlite:///{case / 'fresh.db'}"


def build_targets(a: dict[str, Path]) -> list[Target]:
    """Targets over perfkit's own inputs, given assets(work)."""
    run, run2, store = a["run"], a["run2"], f"sqlite:///{a['store']}"
    bench = ["serve-bench", "http://127.0.0.1:9/v1", "--model", "m", "--requests", "2", "--connect-timeout-s", "1",
             "--no-store"]
    targets = [
        Target("ingest:run.json", "json", _run_copy(run, "run.json"), lambda c, f: ["ingest", str(f.parent), "--db", _fresh(c)]),
        Target("report:run.json", "json", _run_copy(run, "run.json"),
               lambda c, f: ["report", str(f.parent), "--out", str(c / "r.html")]),
        Target("roofline:run.json", "json", _run_copy(run, "run.json"), lambda c, f: ["roofline", str(f.parent), "--no-figure"]),
        Target("compare:run.json", "json", _run_copy(run, "run.json"),
               lambda c, f: ["compare", str(run2), str(f.parent), "--db", store]),
        Target("gate:run.json", "json", _run_copy(run, "run.json"),
               lambda c, f: ["gate", "--baseline", str(run2), "--candidate", str(f.parent), "--db", store,
                             "--no-step-summary"], ok_codes=(1,)),
        Target("ingest:run.partial.json", "json", _run_copy(run, "run.partial.json"),
               lambda c, f: ["ingest", "--partial", str(f.parent), "--db", _fresh(c)]),
        Target("profile:spec", "yaml", _copy(a["spec"]),
               lambda c, f: ["profile", str(f), "--quick", "--quiet", "--no-store", "--no-analyze", "--out", str(c / "runs")],
               ok_codes=(3,), timeout_s=PROFILE_TIMEOUT_S),
        Target("profile:example-spec", "yaml", _copy(REPO / "examples" / "kernels-cpu.yaml"),
               lambda c, f: ["profile", str(f), "--quick", "--quiet", "--no-store", "--no-analyze", "--out", str(c / "runs")],
               ok_codes=(3,), timeout_s=PROFILE_TIMEOUT_S),
        Target("gate:policy", "yaml", _copy(a["policy"]),
               lambda c, f: ["gate", "--baseline", str(run2), "--candidate", str(run), "--policy", str(f), "--db", store,
                             "--no-step-summary"], ok_codes=(1,)),
        Target("ingest:csv", "csv", _copy(a["csv"]), lambda c, f: ["ingest", "--format", "csv", str(f), "--db", _fresh(c)]),
        Target("ingest:pytest-benchmark", "json", _copy(a["pytest"]),
               lambda c, f: ["ingest", "--format", "pytest-benchmark", str(f), "--db", _fresh(c)]),
        Target("ingest:vllm", "json", _copy(SERVING / "vllm" / "vllm-0.11-detailed.json"),
               lambda c, f: ["ingest", "--format", "serving", str(f), "--db", _fresh(c)]),
        Target("ingest:vllm-jsonl", "jsonl", _copy(SERVING / "vllm" / "vllm-append.jsonl"),
               lambda c, f: ["ingest", "--format", "vllm", str(f), "--db", _fresh(c)]),
        Target("ingest:aiperf", "json", _copy(SERVING / "aiperf" / "aiperf-0.10" / "profile_export_aiperf.json"),
               lambda c, f: ["ingest", "--format", "aiperf", str(f), "--db", _fresh(c)]),
        Target("ingest:aiperf-jsonl", "jsonl", _copy(SERVING / "aiperf" / "aiperf-0.10" / "profile_export.jsonl"),
               lambda c, f: ["ingest", "--format", "aiperf", str(f), "--db", _fresh(c)]),
        Target("ingest:guidellm", "json", _copy(SERVING / "guidellm" / "benchmarks-0.7.json"),
               lambda c, f: ["ingest", "--format", "guidellm", str(f), "--db", _fresh(c)]),
        Target("serve-bench:replay", "bytes", _copy(a["replay"]),
               lambda c, f: [*bench, "--replay", str(f), "--out", str(c / "runs")], ok_codes=(3,)),
        Target("serve-bench:dataset", "json", _copy(a["dataset"]),
               lambda c, f: [*bench, "--dataset", str(f), "--out", str(c / "runs")], ok_codes=(3,)),
        Target("analyze:kineto", "json", _copy(REPO / "examples" / "traces" / "alexnet-a100.json.gz"),
               lambda c, f: ["analyze", str(f)]),
        Target("analyze:nsys", "bytes", _copy(SHARED / "nsys" / "h100_2gpu_1s.sqlite"), lambda c, f: ["analyze", str(f)]),
        Target("memory:pickle", "bytes", _copy(REPO / "tests" / "data" / "memory" / "mosaic" / "output.pickle"),
               lambda c, f: ["memory", str(f)]),
        Target("history:store", "store", _copy(a["store"]), lambda c, f: ["history", "*", "--db", f"sqlite:///{f}"]),
        Target("runs:store", "store", _copy(a["store"]), lambda c, f: ["runs", "--db", f"sqlite:///{f}"]),
        Target("ingest:store", "store", _copy(a["store"]), lambda c, f: ["ingest", str(run), "--db", f"sqlite:///{f}"]),
    ]
    return targets
