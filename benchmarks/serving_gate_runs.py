"""Serving runs for benchmarks/serving_gate.py: `perfkit serve` as a subprocess on a free port,
and `perfkit serve-bench` against it in this process, each run read back as a gate side."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfkit.cli import main as perfkit_main
from perfkit.comparison.sides import side_from_run
from perfkit.core.record import load_run
from perfkit.regression.gate.compare import RunSide
from tests.helpers.serving_server import running_server


@dataclass(frozen=True)
class Server:
    """One server setting: `perfkit serve` arguments at a per-token slowdown (1.0: the base)."""

    kind: str  # synthetic | tiny
    slowdown: float

    def args(self) -> list[str]:
        if self.kind == "synthetic":  # 10 ms ITL with 1 ms gaussian jitter per gap
            return ["--synthetic", "--ttft-ms", "20", "--itl-ms", f"{10 * self.slowdown:g}", "--jitter-ms", "1",
                    "--seed", f"{int(self.slowdown * 1000)}"]
        return ["--model", "tiny", "--max-batch", "4", "--extra-step-ms", f"{40 * self.slowdown:g}"]


def bench(url: str, out: Path, db: str, concurrency: int, requests: int, kind: str) -> RunSide:
    """One `perfkit serve-bench` stage (12 output tokens, a price and an SLO) read back as a side."""
    slo = "ttft=0.5,tpot=0.05" if kind == "synthetic" else "ttft=2,tpot=0.1"
    args = ["serve-bench", url, "--out", str(out), "--db", db, "--concurrency", str(concurrency),
            "--requests", str(requests), "--output-len", "12", "--input-len", "8", "--slo", slo,
            "--price-per-gpu-hour", "2.5", "--quiet"]
    if kind == "tiny":
        args += ["--token-ids", "--vocab-size", "512"]
    before = set(out.glob("*")) if out.exists() else set()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = perfkit_main(args)
    new = sorted(set(out.glob("*")) - before)
    if code not in (0, 1) or len(new) != 1:
        raise RuntimeError(f"serve-bench exited {code}, {len(new)} new run dirs")
    run = load_run(new[0] / "run.json")
    return side_from_run(run, new[0].name)


def bench_many(server: Server, times: int, out: Path, db: str, concurrency: int, requests: int) -> list[RunSide]:
    """`times` benches of one start of `server`."""
    with running_server(*server.args()) as url:
        return [bench(url, out, db, concurrency, requests, server.kind) for _ in range(times)]


def stage_samples(side: RunSide, suffix: str) -> Sequence[float]:
    """The samples of the side's metric ending in `:suffix` (empty when it has none)."""
    for m in side.metrics:
        if m.name.endswith(":" + suffix):
            return m.samples
    return ()
