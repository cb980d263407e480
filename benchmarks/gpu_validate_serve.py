"""A server on the GPU: `perfkit serve --model` behind `serve-bench`, against the decode workload.

Starts `perfkit serve --model PRESET --device DEVICE` (random weights), runs `perfkit serve-bench`
at the given concurrencies, then `perfkit profile` of the decode workload for the same model,
batch 1 and the context the bench's requests reach, in the same eager mode the server runs.
Checks: every stage completed; TPOT p50 at concurrency 1 within 10% of the decode step's time;
energy per output token recorded where NVML has an energy counter (said "not measured" where
not, never 0). On a CPU (`--device cpu --model tiny`, the CI part) the same steps run small.

    python -m benchmarks.gpu_validate_serve --device cuda --model llama-3.1-8b --out WORK/serve_gpu
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TPOT_TOL = 0.10
LISTENING = "perfkit serve: listening on "


def _perfkit(*args: str) -> list[str]:
    return [sys.executable, "-m", "perfkit", *args]


def start_server(args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = _perfkit("serve", "--model", args.model, "--device", args.device, "--dtype", args.dtype,
                   "--max-batch", str(max(args.concurrency)), "--cache-len", str(args.input_len + args.output_len + 8),
                   "--port", "0")
    return launch(cmd, log, args.start_timeout_s)


def launch(cmd: list[str], log: Path, timeout_s: float) -> tuple[subprocess.Popen[str], str]:
    """Start `perfkit serve ... --port 0` (stderr to `log`); (the process, its URL) once it prints
    its listening line."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(LISTENING):
            return proc, line[len(LISTENING):].split()[0]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"perfkit serve did not start: {log.read_text()[-1500:]}")


def _vocab(preset: str) -> int:
    from perfkit.workloads.models.presets import PRESETS

    return int(PRESETS[preset].vocab_size)


def decode_spec(args: argparse.Namespace) -> str:
    """The decode workload at the context the bench's requests reach half-way through their output."""
    return json.dumps({
        "name": "serve-gpu-decode", "device": args.device, "seed": 0,
        "timing": {"warmup_s": 0.2, "budget_s": 1.0, "min_reps": 20},
        "workloads": [{"kind": "decode", "name": "decode", "model": {"preset": args.model, "dtype": args.dtype},
                       "batch": 1, "prompt_len": args.input_len, "decode_steps": args.output_len,
                       "mode": "eager", "timed": ["decode_step"]}],
    })


def _points(run_json: Path) -> list[dict[str, Any]]:
    return list(json.loads(run_json.read_text()).get("points", []))


def _latest(parent: Path) -> Path:
    return sorted(parent.glob("*/run.json"), key=lambda p: p.stat().st_mtime)[-1]


def check(bench_points: list[dict[str, Any]], decode_points: list[dict[str, Any]]) -> dict[str, Any]:
    """The step's verdict from the two runs' points (pure: tested on CPU runs)."""
    stages = {}
    for p in bench_points:
        m = p.get("metrics") or {}
        server = m.get("server_metrics") or {}
        stages[str(p.get("key"))] = {
            "status": p.get("status"), "tpot_p50_s": m.get("tpot_p50_s"), "ttft_p50_s": m.get("ttft_p50_s"),
            "output_tok_per_s": m.get("output_tok_per_s"), "client_bound": m.get("client_bound"),
            "energy_per_output_tok_j": server.get("server_gpu_energy_per_output_tok_j", "not measured"),
            "gpu_power_mean_w": server.get("server_gpu_power_mean_w", "not measured")}
    out: dict[str, Any] = {"stages": stages}
    failed = [k for k, s in stages.items() if s["status"] != "ok"]
    step = next((p for p in decode_points if p.get("status") == "ok"), None)
    decode_s = ((step or {}).get("measurement") or {}).get("stats", {}).get("median_s")
    out["decode_step_s"] = decode_s
    c1 = next((s for k, s in stages.items() if "concurrency=1," in k + "," and s["tpot_p50_s"]), None)
    if c1 and decode_s:
        out["tpot_c1_over_decode"] = ratio = c1["tpot_p50_s"] / decode_s
        out["tpot_within_10pct"] = abs(ratio - 1) <= TPOT_TOL
    if failed:
        out["fail_reason"] = f"stage(s) not ok: {', '.join(failed)}"
    elif not decode_s:
        out["fail_reason"] = "the decode workload gave no decode-step time"
    elif c1 is None:
        out["fail_reason"] = "no concurrency-1 stage with a TPOT"
    elif not out["tpot_within_10pct"]:
        out["fail_reason"] = (f"TPOT at concurrency 1 is {out['tpot_c1_over_decode']:.2f}x the decode step "
                              f"({c1['tpot_p50_s'] * 1e3:.2f} ms vs {decode_s * 1e3:.2f} ms), beyond 10%")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="llama-3.1-8b")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--concurrency", default="1,8,32")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--start-timeout-s", type=float, default=120.0)
    ap.add_argument("--out", type=Path, required=True, help="folder: runs, logs and serve_gpu.json")
    args = ap.parse_args(argv)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PERFKIT_HOME": os.environ.get("PERFKIT_HOME", str(args.out / "perfkit-home"))}
    os.environ.update(env)
    proc, url = start_server(args, args.out / "serve.log")
    try:
        bench = subprocess.run(_perfkit("serve-bench", url, "--concurrency", ",".join(map(str, args.concurrency)),
                                        "--requests", str(args.requests), "--input-len", str(args.input_len),
                                        "--output-len", str(args.output_len), "--token-ids",
                                        "--vocab-size", str(_vocab(args.model)),
                                        "--out", str(args.out / "bench"), "--no-store", "--quiet"),
                               capture_output=True, text=True, timeout=600)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (args.out / "bench.log").write_text(bench.stdout + bench.stderr)
    spec = args.out / "decode.yaml"
    spec.write_text(decode_spec(args))  # JSON is YAML
    decode = subprocess.run(_perfkit("profile", str(spec), "--out", str(args.out / "decode"), "--no-store", "--quiet"),
                            capture_output=True, text=True, timeout=600)
    (args.out / "decode.log").write_text(decode.stdout + decode.stderr)
    try:
        result = check(_points(_latest(args.out / "bench")), _points(_latest(args.out / "decode")))
    except (IndexError, OSError, ValueError) as exc:
        result = {"fail_reason": f"a run is missing: {exc}; bench exit {bench.returncode}, decode exit {decode.returncode}"}
    result.update(device=args.device, model=args.model, dtype=args.dtype, concurrency=args.concurrency)
    (args.out / "serve_gpu.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
