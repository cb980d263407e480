"""Does a profiling window move a stage's other numbers? A/B against plain runs of the same server.

One `perfkit serve --model tiny` (with --profile-dir); R rounds, each a plain `serve-bench` run and
one with `--profile N` (which goes first alternates). Per metric: the median over rounds of
profiled / plain, beside the noise floor of the machine: the median of |plain_i / plain_(i-1) - 1|
over consecutive plain runs. The requests inside the window are left out of the latency numbers
(TTFT, TPOT, ITL, E2E); the rates count every request.

Pass: every latency metric's median ratio within 5% of 1.

    OMP_NUM_THREADS=1 python benchmarks/serving_profile_window.py --rounds 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gpu_validate_serve import launch  # noqa: E402

LATENCY = ("ttft_p50_s", "tpot_p50_s", "token_itl_p50_s", "e2e_p50_s")
RATES = ("output_tok_per_s", "request_per_s")
TARGET = 0.05


def _bench(url: str, out: Path, load: list[str], profile: int | None) -> dict[str, float]:
    extra = ["--profile", str(profile)] if profile else []
    subprocess.run([sys.executable, "-m", "perfkit", "serve-bench", url, *load, *extra, "--no-store", "--out", str(out)],
                   check=True, timeout=900, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = json.loads(max(out.glob("*/run.json"), key=lambda p: p.stat().st_mtime).read_text())
    return {k: float(v) for k, v in run["points"][0]["metrics"].items() if k in LATENCY + RATES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--profile", type=int, default=16, help="steps in the window")
    ap.add_argument("--load", default="--concurrency 4 --requests 48 --input-len 32 --output-len 32")
    ap.add_argument("--smoke", action="store_true", help="one round of 8 requests: checks the script, judges nothing")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.load = 1, "--concurrency 2 --requests 8 --input-len 8 --output-len 8"
    load = a.load.split()
    plain: list[dict[str, float]] = []
    prof: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        server, url = launch([sys.executable, "-m", "perfkit", "serve", "--model", "tiny", "--port", "0",
                              "--profile-dir", str(tmp / "traces")], tmp / "serve.log", 120.0)
        try:
            _bench(url, tmp / "warm", load, None)
            for i in range(a.rounds):
                order = [None, a.profile] if i % 2 == 0 else [a.profile, None]
                for p in order:
                    m = _bench(url, tmp / f"r{i}-{p or 0}", load, p)
                    (prof if p else plain).append(m)
                print(f"round {i}: " + "  ".join(f"{k} {prof[-1][k] / plain[-1][k]:.3f}" for k in LATENCY + RATES
                                                   if plain[-1].get(k)), flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)
    ok = True
    print(f"\n{'metric':<18} {'profiled/plain (median)':>24} {'plain-to-plain |change| (median)':>34}")
    for k in LATENCY + RATES:
        ratios = [p[k] / q[k] for p, q in zip(prof, plain, strict=True) if q.get(k) and k in p]
        noise = [abs(plain[i][k] / plain[i - 1][k] - 1) for i in range(1, len(plain)) if plain[i - 1].get(k)]
        if not ratios:
            continue
        r = statistics.median(ratios)
        n = f"{statistics.median(noise):.1%}" if noise else "-"
        print(f"{k:<18} {r:>24.3f} {n:>34}")
        ok &= k not in LATENCY or abs(r - 1) < TARGET
    print("PASS" if ok else "FAIL")
    return 0 if ok or a.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
