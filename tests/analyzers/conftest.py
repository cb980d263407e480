"""Fixtures for the trace analyzer tests: a hand-built Kineto trace writer, a real CPU trace."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


class KinetoTrace:
    """Builds a minimal Kineto Chrome trace event by event (times in microseconds)."""

    def __init__(self, rank: int | None = None, world_size: int | None = None, pid: int = 100) -> None:
        self.events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python"}}
        ]
        self.meta: dict[str, Any] = {"schemaVersion": 1}
        if rank is not None:
            self.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size or 1}
        self.pid = pid
        self._corr = 1000

    def x(self, cat: str, name: str, ts: float, dur: float, pid: int | None = None, tid: int = 1, **args: Any) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": self.pid if pid is None else pid, "tid": tid, "ts": ts, "dur": dur, "args": args}
        self.events.append(event)
        return event

    def cpu(self, name: str, ts: float, dur: float, tid: int = 1, **args: Any) -> dict[str, Any]:
        return self.x("cpu_op", name, ts, dur, tid=tid, **args)

    def annotation(self, name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
        return self.x("user_annotation", name, ts, dur, tid=tid)

    def step(self, n: int, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
        return self.annotation(f"ProfilerStep#{n}", ts, dur, tid)

    def launch(self, ts: float, dur: float, name: str = "cudaLaunchKernel", tid: int = 1, corr: int | None = None) -> int:
        if corr is None:
            self._corr += 1
            corr = self._corr
        self.x("cuda_runtime", name, ts, dur, tid=tid, correlation=corr, **{"External id": corr})
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"})
        return corr

    def gpu(self, name: str, ts: float, dur: float, corr: int, stream: int = 7, cat: str = "kernel", device: int = 0, **args: Any) -> dict[str, Any]:
        event = self.x(cat, name, ts, dur, pid=device, tid=stream, device=device, stream=stream, correlation=corr, **args)
        self.events.append({"ph": "f", "id": corr, "pid": device, "tid": stream, "ts": ts, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        return event

    def kernel(self, name: str, launch_ts: float, launch_dur: float, ts: float, dur: float, stream: int = 7, tid: int = 1, api: str = "cudaLaunchKernel", cat: str = "kernel") -> int:
        corr = self.launch(launch_ts, launch_dur, api, tid)
        self.gpu(name, ts, dur, corr, stream, cat=cat)
        return corr

    def document(self) -> dict[str, Any]:
        return {**self.meta, "traceEvents": self.events, "traceName": "hand-built"}

    def write(self, path: Path) -> Path:
        data = json.dumps(self.document(), indent=1).encode()
        path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
        return path


@pytest.fixture
def kineto() -> Callable[..., KinetoTrace]:
    return KinetoTrace


@pytest.fixture(scope="session")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real torch.profiler CPU trace (record_shapes) of small matmuls, linear and SDPA."""
    torch = pytest.importorskip("torch")
    import torch.profiler as tp

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("cpu_trace") / "cpu.json.gz"
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    lin = torch.nn.Linear(64, 32)
    q = torch.randn(1, 2, 16, 8)
    schedule = tp.schedule(wait=0, warmup=1, active=2)
    with tp.profile(
        activities=[tp.ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule,
        on_trace_ready=lambda p: p.export_chrome_trace(str(out)),
    ) as prof:
        for _ in range(3):
            with tp.record_function("decode"):
                c = a @ b
                torch.addmm(c, a, b)
                lin(a)
                torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
                torch.bmm(q[0], q[0].transpose(1, 2))
            prof.step()
    assert out.exists()
    return out


def raw_events(path: Path) -> list[dict[str, Any]]:
    """The trace's events decoded with the standard library (an independent reader)."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        events: list[dict[str, Any]] = json.load(fh)["traceEvents"]
    return events


@pytest.fixture(scope="session")
def raw() -> Callable[[Path], list[dict[str, Any]]]:
    return raw_events
