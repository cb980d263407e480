"""Fixtures of the report tests: one real (tiny) CPU profile run, made once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tiny_run import profile_tiny


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads a developer's ./perfkit.db or calibrations."""
    monkeypatch.setenv("PERFKIT_DB", str(tmp_path / "no-store.db"))
    monkeypatch.setenv("PERFKIT_HOME", str(tmp_path / "perfkit-home"))


@pytest.fixture(scope="session")
def tiny_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return profile_tiny(tmp_path_factory.mktemp("tiny"))


EVIL_KERNEL = 'void gemm<float, 128>(float const*) </script><script>alert("pwned")</script> & | `x` [a](b)'


def write_kineto_trace(path: Path, names: list[str], repeats: int = 30) -> Path:
    """A Kineto (torch.profiler) Chrome trace of GPU kernels launched from one CPU thread.

    Each repeat launches every name once: a cudaLaunchKernel runtime call (correlation id) and
    its kernel on stream 7, 2 us after the call ends; kernel k of a repeat runs (k + 1) us.
    """
    import gzip
    import json

    events: list[dict[str, object]] = []
    ts = 1_000.0
    corr = 1
    for _ in range(repeats):
        for k, name in enumerate(names):
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": ts, "dur": 4.0, "args": {"correlation": corr, "External id": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts + 6.0,
                           "dur": float(k + 1), "args": {"correlation": corr, "stream": 7, "device": 0,
                                                         "External id": corr}})
            ts += 20.0
            corr += 1
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "traceEvents": events}
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return path


def with_traces(run_dir: Path, dest: Path, names: list[str]) -> Path:
    """A copy of a real run directory whose ok points carry a GPU kernel trace of `names`."""
    import json
    import shutil

    shutil.copytree(run_dir, dest)
    record = json.loads((dest / "run.json").read_text())
    for i, point in enumerate(record["points"]):
        if point["status"] == "ok":
            rel = f"traces/gpu-{i}.json.gz"
            write_kineto_trace(dest / rel, names)
            point["trace"] = rel
    (dest / "run.json").write_text(json.dumps(record))
    return dest


@pytest.fixture
def evil_kernel() -> str:
    return EVIL_KERNEL


@pytest.fixture
def traced_copy():  # type: ignore[no-untyped-def]
    """with_traces(run_dir, dest, names): a copy of a run whose ok points carry a GPU trace."""
    return with_traces


def steady_copy(run_dir: Path, dest: Path, run_id: str, scale: dict[int, float] | None = None, seed: int = 0) -> Path:
    """A copy of a real run whose ok points' samples are 20 draws around the real median (2% sigma),
    times `scale[i]` for the i-th ok point: comparisons with known answers whatever this machine's
    noise was when the real run was made."""
    import json
    import shutil

    import numpy as np

    rng = np.random.default_rng(seed)
    shutil.copytree(run_dir, dest)
    record = json.loads((dest / "run.json").read_text())
    record["run_id"] = run_id
    ok = [p for p in record["points"] if p["status"] == "ok"]
    for i, p in enumerate(ok):
        m = p["measurement"]
        level = float(np.median(m["samples_s"])) * (scale or {}).get(i, 1.0)
        m["samples_s"] = [float(x) for x in level * np.exp(rng.normal(0.0, 0.02, 20))]
        m.pop("stats", None)
    (dest / "run.json").write_text(json.dumps(record))
    return dest


@pytest.fixture
def steady():  # type: ignore[no-untyped-def]
    """steady_copy(run_dir, dest, run_id, scale=None, seed=0)."""
    return steady_copy
