"""Builders of perfkit Runs from raw samples, and a throwaway PostgreSQL cluster, for the
store, gate and command tests (loaded by the conftest files beside the tests)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfkit.core.artifacts import Artifacts
from perfkit.core.cost import Cost
from perfkit.core.env import Env, GitState, GpuClocks, GpuState, Versions
from perfkit.core.measurement import Measurement
from perfkit.core.record import STATUS_FAILED, STATUS_OK, PointResult, Run
from perfkit.store.admin import create_database, drop_database

H100 = GpuState(index=0, name="NVIDIA H100 80GB HBM3", driver="550.54.15", clocks=GpuClocks(max_sm_mhz=1980))


def measurement(samples: Sequence[float]) -> Measurement:
    return Measurement(
        samples_s=tuple(float(s) for s in samples),
        warmup_reps=3,
        stop_reason="converged",
        timer="perf_counter",
        target_rel_ci=0.01,
    )


def gemm_point(samples: Sequence[float], key: str = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16",
               **metrics: Any) -> PointResult:
    return PointResult(
        key=key,
        kind="gemm",
        workload="mm",
        params={"m": 1024, "n": 1024, "k": 1024, "dtype": "bf16"},
        status=STATUS_OK,
        measurement=measurement(samples),
        cost=Cost(flop=2.0 * 1024**3, bytes=3 * 2 * 1024**2),
        metrics=dict(metrics),
    )


def failed_point(key: str = "attn/sdpa/s=4096") -> PointResult:
    return PointResult(key=key, kind="attention", workload="sdpa", params={"s": 4096},
                       status=STATUS_FAILED, error="CUDA out of memory")


def make_run(
    run_id: str,
    samples: Sequence[float] | None = None,
    *,
    commit: str = "c0ffee0",
    branch: str = "main",
    created: str = "2026-01-01T00:00:00+00:00",
    gpu: GpuState | None = None,
    points: Sequence[PointResult] | None = None,
    **env_fields: Any,
) -> Run:
    pts = tuple(points) if points is not None else (gemm_point(samples or [1e-3] * 10),)
    env = Env(gpus=(gpu or H100,), git=GitState(commit=commit, branch=branch, dirty=False), host="box1",
              versions=Versions(torch="2.13.0"), **env_fields)
    return Run(
        run_id=run_id,
        created=created,
        status="complete",
        spec={"name": "demo", "points": ["gemm"]},
        spec_hash="abc123",
        spec_path="model.yaml",
        device="cuda",
        env=env,
        points=pts,
        finished=created,
        artifacts=Artifacts(extra={"trace_dir": "traces"}),
    )


def noisy(level: float, n: int, seed: int, cv: float = 0.01) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in level * (1.0 + cv * rng.standard_normal(n))]


# --- PostgreSQL ------------------------------------------------------------------------------

def pg_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--", *cmd]
    return ["su", "postgres", "-c", " ".join(cmd)]


@contextlib.contextmanager
def postgres_cluster(bin_dir: Path) -> Iterator[str]:
    """initdb + pg_ctl start a throwaway cluster on a free port; yields a SQLAlchemy URL."""
    tmp = Path(tempfile.mkdtemp(prefix="perfkit-pg-"))
    data, sock = tmp / "data", tmp / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
        shutil.chown(sock, "postgres")
        os.chmod(tmp, 0o755)
    port = _free_port()
    run = lambda cmd: subprocess.run(_as_postgres(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
        run([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", "60", "-l", str(tmp / "log"), "-o",
             f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def fresh_pg_database(base_url: str, name: str) -> Iterator[str]:
    """Create database `name` on the cluster, yield its URL, drop it afterwards."""
    db = "t_" + "".join(ch if ch.isalnum() else "_" for ch in name.lower())[:50]
    url = create_database(base_url, db)
    try:
        yield url
    finally:
        drop_database(base_url, db)
