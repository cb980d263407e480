"""The tools of benchmarks/serving_peers.py: how each is run for one stage and what it measured.

One stage of a tool is one process: perfkit's `serve-bench` (this checkout), AIPerf's `aiperf
profile`, GuideLLM's `guidellm run`, each at a fixed concurrency (closed loop), a
fixed number of requests, a prompt of `input_len` tokens and `output_len` output tokens asked
with ignore_eos, against the completions endpoint, the token counts from the same local
tokenizer folder. The peers' result files are read by perfkit's own ingesters
(perfkit.ingest.serving), so the numbers are each tool's own (its TPOT is what the tool calls
ITL: (E2E - TTFT) / (output tokens - 1)).
"""

from __future__ import annotations

import gzip
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("perfkit", "aiperf", "guidellm")


@dataclass(frozen=True)
class StageLoad:
    url: str  # http://HOST:PORT
    model: str  # the served model name
    concurrency: int
    requests: int
    input_len: int
    output_len: int
    tokenizer: Path  # a folder with tokenizer.json (and tokenizer_config.json for transformers)
    usage: bool  # the server streams usage (else the tool must count tokens itself)


@dataclass(frozen=True)
class ToolStage:
    """What one tool said about one stage (None: it did not say)."""

    completed: int
    failed: int
    ttft_p50_s: float | None
    tpot_p50_s: float | None
    output_tokens_mean: float | None
    wall_s: float  # the tool's process, start to exit
    token_source: str = ""  # how the tool counted output tokens, where it says
    error: str | None = None  # why the stage gave no numbers


def _run(cmd: list[str], log: Path, timeout_s: float) -> tuple[int, float]:
    t0 = time.monotonic()
    with log.open("w") as out:
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.monotonic() - t0


def _failed(log: Path, rc: int, wall_s: float) -> ToolStage:
    tail = " | ".join(line.strip() for line in log.read_text(errors="replace").strip().splitlines()[-3:])
    return ToolStage(0, 0, None, None, None, wall_s, error=f"exit {rc}: {tail[-400:]}")


def perfkit_cmd(load: StageLoad, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "perfkit", "serve-bench", load.url, "--model", load.model,
           "--concurrency", str(load.concurrency), "--requests", str(load.requests),
           "--warmup", str(load.concurrency), "--input-len", str(load.input_len),
           "--output-len", str(load.output_len), "--tokenizer", str(load.tokenizer),
           "--no-store", "--quiet", "--format", "json", "--out", str(out)]
    return cmd + ([] if load.usage else ["--no-usage"])


def run_perfkit(load: StageLoad, work: Path, timeout_s: float) -> ToolStage:
    out = work / "runs"
    log = work / "perfkit.log"
    cmd = perfkit_cmd(load, out)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    wall_s = time.monotonic() - t0
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 1):  # 1: the stage was judged (client-bound, INVALID); numbers stand
        return _failed(log, proc.returncode, wall_s)
    doc = json.loads(proc.stdout)
    m = doc["stages"][0]["metrics"]
    with gzip.open(Path(doc["run_dir"]) / m["requests_file"], "rt") as f:
        records = [json.loads(line) for line in f]
    ok = [r for r in records if r.get("error") is None]
    tokens = [float(r["output_tokens"]) for r in ok]
    return ToolStage(len(ok), len(records) - len(ok), m.get("ttft_p50_s"), m.get("tpot_p50_s"),
                     statistics.fmean(tokens) if tokens else None, wall_s, str(m.get("token_source", "")))


def aiperf_cmd(exe: str, load: StageLoad, out: Path) -> list[str]:
    return [exe, "profile", "--model", load.model, "--url", load.url, "--endpoint-type", "completions",
            "--streaming", "--tokenizer", str(load.tokenizer),
            "--concurrency", str(load.concurrency), "--request-count", str(load.requests),
            "--warmup-request-count", str(load.concurrency),
            "--synthetic-input-tokens-mean", str(load.input_len), "--synthetic-input-tokens-stddev", "0",
            "--output-tokens-mean", str(load.output_len), "--output-tokens-stddev", "0",
            "--extra-inputs", "ignore_eos:true", "--random-seed", "0",
            "--ui-type", "none", "--artifact-dir", str(out)]


def guidellm_cmd(exe: str, load: StageLoad, out: Path) -> list[str]:
    """GuideLLM 0.8's `run` (its options are kind=...,key=value lists)."""
    return [exe, "run",
            "--backend", f"kind=openai_http,target={load.url},model={load.model},request_format=/v1/completions",
            "--tokenizer", f"kind=hf_auto,model={load.tokenizer}",
            "--data", f"kind=synthetic_text,prompt_tokens={load.input_len},output_tokens={load.output_len}",
            "--profile", f"kind=concurrent,streams={load.concurrency}",
            "--constraint", f"kind=max_requests,count={load.requests}",
            "--output", f"kind=json,path={out / 'benchmarks.json'}", "--disable-console-interactive"]


def _peer_stage(path: Path, wall_s: float) -> ToolStage:
    from perfkit.ingest.serving.dispatch import read_serving_results

    stages = read_serving_results(path)
    if not stages:
        return ToolStage(0, 0, None, None, None, wall_s, error=f"{path}: no stage in it")
    s = stages[-1].summary
    done = int(s.get("completed", 0))
    out = s.get("output_tokens")
    mean_out = out / done if out is not None and done else None
    if mean_out is None and stages[-1].requests:
        counts = [r.output_tokens for r in stages[-1].requests if r.ok]
        mean_out = statistics.fmean(counts) if counts else None
    return ToolStage(done, int(s.get("failed", 0)), s.get("ttft_p50_s"), s.get("tpot_p50_s"), mean_out, wall_s,
                     "text (the tool's tokenizer)")


def run_peer(tool: str, exe: str, load: StageLoad, work: Path, timeout_s: float) -> ToolStage:
    out = work / tool
    out.mkdir(parents=True, exist_ok=True)
    cmd = aiperf_cmd(exe, load, out) if tool == "aiperf" else guidellm_cmd(exe, load, out)
    log = work / f"{tool}.log"
    rc, wall_s = _run(cmd, log, timeout_s)
    found = sorted(out.rglob("profile_export_aiperf.json" if tool == "aiperf" else "benchmarks.json"))
    if rc != 0 or not found:
        return _failed(log, rc, wall_s)
    try:
        return _peer_stage(found[-1], wall_s)
    except Exception as exc:  # a peer's file perfkit cannot read is a finding, not a crash
        return ToolStage(0, 0, None, None, None, wall_s, error=f"{found[-1].name}: {exc}")
