"""The load client against llama.cpp's own `llama-server`: per request, the client's numbers
beside the server's own `timings` (prompt_ms, predicted_ms, predicted_n), at several concurrencies.

Run:  PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.serving_llama --server PATH [--out FILE]
      (PATH: scripts/build-llama-server.sh prints it; or $PERFKIT_LLAMA_SERVER)
      ... --smoke   (no server: says so and exits 0; with one: one short stage)

The model is a random-weight llama GGUF written here (perfkit.workloads.serving.tiny_gguf, sized
by --layers / --dim so that a token costs milliseconds on a CPU); llama-server runs it on one
thread with --parallel 4 slots. Requests ask for logprobs, so every chunk's token count is known
(llama.cpp sends no per-chunk usage). For each request:
- server TTFT = prompt_ms (prompt processing; the first token is sampled from its logits);
  client TTFT = first token received - request sent (so client - server = HTTP, tokenizing,
  queueing for a slot, detokenizing);
- server TPOT = predicted_ms / predicted_n; client TPOT = (E2E - TTFT) / (output tokens - 1).
It prints the medians per stage, the largest per-request differences and the client-bound check,
and writes the table (Markdown) and the raw pairs (JSON) with --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(server: str, model: Path, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen([server, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "4096",
                             "-np", "4", "-t", str(threads), "--metrics"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{server}: did not become healthy in 60 s")


def _pairs(result: Any) -> list[dict[str, float]]:
    out = []
    for r in result.records:
        timings = (r.server.get("timings") or [None])[-1]
        if not r.ok or not isinstance(timings, dict) or r.ttft_s is None or r.e2e_s is None:
            continue
        n = len(r.token_times_s)
        out.append({
            "client_ttft_ms": r.ttft_s * 1e3, "server_prompt_ms": float(timings["prompt_ms"]),
            "client_tpot_ms": (r.e2e_s - r.ttft_s) / (n - 1) * 1e3 if n > 1 else float("nan"),
            "server_tpot_ms": float(timings["predicted_ms"]) / max(int(timings["predicted_n"]), 1),
            "client_tokens": float(n), "server_predicted_n": float(timings["predicted_n"]),
        })
    return out


def run(server: str, concurrencies: list[int], requests: int, output: int, layers: int, dim: int,
        threads: int) -> list[dict[str, Any]]:
    from perfkit.workloads.serving.client.send import ClientOptions, Prompt
    from perfkit.workloads.serving.client.stage import StagePlan, run_stage
    from perfkit.workloads.serving.measurements.client_bound import stage_verdict
    from perfkit.workloads.serving.tiny_gguf import TinyLlama, write_tiny_gguf

    stages = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TinyLlama(n_layer=layers, n_embd=dim, n_head=max(dim // 64, 1), n_head_kv=max(dim // 128, 1),
                        n_ff=dim * 3, n_ctx_train=4096)
        model = write_tiny_gguf(Path(tmp) / "model.gguf", cfg)
        proc, url = _start(server, model, threads)
        try:
            opts = ClientOptions(base_url=url, model="tiny", logprobs=True)
            for c in concurrencies:
                plan = StagePlan(prompt_for=lambda i: Prompt("the quick brown fox " * 16, 64, output), concurrency=c,
                                 requests=requests, warmup=c)
                result = asyncio.run(run_stage(opts, plan))
                pairs = _pairs(result)
                _, reason = stage_verdict(result.records, result.lag_s, [], None, result.lag_times_s,
                                          result.t0_monotonic_s, result.lag_on_thread)
                stages.append({"concurrency": c, "requests": len(result.records), "pairs": pairs,
                               "client_bound": reason, "token_sources": sorted({r.token_source for r in result.records}),
                               "errors": [r.error for r in result.records if r.error]})
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return stages


def _med(pairs: list[dict[str, float]], key: str) -> float:
    return statistics.median(p[key] for p in pairs) if pairs else float("nan")


def table(stages: list[dict[str, Any]]) -> str:
    lines = ["| concurrency | requests with timings | client TTFT p50 ms | server prompt_ms p50 | client TPOT p50 ms "
             "| server TPOT p50 ms | max \\|TPOT diff\\| ms | tokens match | client-bound |",
             "|---:|---:|---:|---:|---:|---:|---:|:--|:--|"]
    for s in stages:
        p = s["pairs"]
        worst = max((abs(x["client_tpot_ms"] - x["server_tpot_ms"]) for x in p), default=float("nan"))
        tokens = all(x["client_tokens"] == x["server_predicted_n"] for x in p)
        lines.append(f"| {s['concurrency']} | {len(p)} of {s['requests']} | {_med(p, 'client_ttft_ms'):.3g} | "
                     f"{_med(p, 'server_prompt_ms'):.3g} | {_med(p, 'client_tpot_ms'):.3g} | "
                     f"{_med(p, 'server_tpot_ms'):.3g} | {worst:.3g} | {tokens} | {s['client_bound'] or 'no'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.environ.get("PERFKIT_LLAMA_SERVER"))
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--output", type=int, default=32)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="write FILE.md and FILE.json")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if not args.server or not Path(args.server).is_file():
        print("no llama-server (build it with scripts/build-llama-server.sh, pass --server); nothing to compare")
        return 0
    conc = [int(c) for c in args.concurrency.split(",")]
    if args.smoke:
        conc, args.requests, args.output, args.layers, args.dim = [1], 2, 8, 2, 128
    stages = run(args.server, conc, args.requests, args.output, args.layers, args.dim, args.threads)
    text = table(stages)
    print(text)
    if args.out:
        head = (f"# The load client vs llama-server's own timings\n\n`python -m benchmarks.serving_llama "
                f"{' '.join(sys.argv[1:] if argv is None else argv)}` on {os.uname().nodename} "
                f"(load {os.getloadavg()[0]:.1f}); model: random llama GGUF, {args.layers} layers, width {args.dim}, "
                f"{args.threads} thread(s), 4 slots; {args.requests} requests of 64 prompt and {args.output} output "
                "tokens per stage; token counts from logprobs.\n\n")
        args.out.with_suffix(".md").write_text(head + text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(stages, indent=1, allow_nan=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
