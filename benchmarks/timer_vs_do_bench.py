"""perfkit's GPU timer vs triton.testing.do_bench on the same matmuls, in one process.

Run on a CUDA machine:  PYTHONPATH=. python -m benchmarks.timer_vs_do_bench [--out FILE]
(`--smoke`: one small shape, one round; without CUDA it prints why and exits 0, as always.)
For each shape and dtype it runs perfkit and do_bench `--rounds` times in ABBA order and prints the
median of each, their ratio (perfkit / do_bench), and the spread. Target: within 2%.
Both flush L2 between repetitions (do_bench zeroes a 256 MB buffer; perfkit zeroes
max(256 MB, 2 x L2)), both time with CUDA events.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

SHAPES = [(8192, 8192, 8192), (4096, 4096, 1024), (4096, 4096, 4096), (1, 4096, 14336)]
DTYPES = ["bf16", "fp16"]


SMOKE_SHAPES = [(1024, 1024, 1024)]


def run(rounds: int, shapes: list[tuple[int, int, int]] = SHAPES) -> list[dict[str, Any]]:
    import torch
    import triton.testing

    from perfkit.core.timing import TimingConfig
    from perfkit.profiler.timer import time_callable

    torch.backends.cuda.matmul.allow_tf32 = False
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}
    rows = []
    for m, n, k in shapes:
        for name in DTYPES:
            a = torch.randn(m, k, device="cuda", dtype=dt[name])
            b = torch.randn(k, n, device="cuda", dtype=dt[name])

            def fn(a: torch.Tensor = a, b: torch.Tensor = b) -> torch.Tensor:
                return a @ b

            pk: list[float] = []
            tb: list[float] = []

            def perfkit_once(fn: Any = fn, out: list[float] = pk) -> None:
                out.append(time_callable(fn, "cuda", TimingConfig(warmup_s=0.025, budget_s=0.5, min_reps=20)).median_s)

            def do_bench_once(fn: Any = fn, out: list[float] = tb) -> None:
                out.append(triton.testing.do_bench(fn, warmup=25, rep=500, return_mode="median") * 1e-3)

            # ABBA order: under sustained load the clocks sag, so whichever timer runs second in
            # every round would read slower; alternating the order cancels that drift
            for r in range(rounds):
                for once in ((perfkit_once, do_bench_once) if r % 2 == 0 else (do_bench_once, perfkit_once)):
                    once()
            pk_med, tb_med = statistics.median(pk), statistics.median(tb)
            rows.append({
                "m": m, "n": n, "k": k, "dtype": name,
                "perfkit_median_s": pk_med, "do_bench_median_s": tb_med,
                "ratio": pk_med / tb_med,
                "perfkit_tflop_per_s": 2 * m * n * k / pk_med / 1e12,
                "perfkit_rounds_s": pk, "do_bench_rounds_s": tb,
            })
            print(f"{m}x{n}x{k} {name}: perfkit {pk_med * 1e6:.1f} us, do_bench {tb_med * 1e6:.1f} us, "
                  f"ratio {pk_med / tb_med:.4f}, {2 * m * n * k / pk_med / 1e12:.0f} TFLOP/s", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--smoke", action="store_true", help="one small shape, one round (checks the script)")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("timer_vs_do_bench needs a CUDA device; nothing to compare on this machine")
        return 0
    rows = run(1, SMOKE_SHAPES) if args.smoke else run(args.rounds)
    worst = max(abs(r["ratio"] - 1) for r in rows)
    print(f"device: {torch.cuda.get_device_name()}; worst |ratio - 1| = {worst:.4f} (target <= 0.02)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)
    return 0 if worst <= 0.02 or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
