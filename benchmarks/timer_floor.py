"""perfkit.bench vs torch.utils.benchmark on calls near the clock's floor (CPU, one thread).

Run:  PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.timer_floor [--rounds N] [--out FILE]
      ... python -m benchmarks.timer_floor --smoke    (one round, 20 ms budgets; targets not judged)

Three callables: `torch.empty(1)` (~100s of ns), a Python no-op `lambda: None` (~tens of ns)
and a 256x256 fp32 matmul (~100s of us). Each round times every callable with perfkit.bench and
with torch.utils.benchmark's Timer (`blocked_autorange`, which times blocks of many calls; and
`adaptive_autorange`) in ABBA order; the medians over the rounds and the ratio perfkit / torch
(blocked_autorange; the median over rounds of each round's ratio, as the two readings of a round
are back to back) are printed with the target for each callable. The load average before
and after is printed too: the machine is shared, and a loaded machine reads slower.
Works on perfkit before calls_per_sample existed (threads are pinned to 1 here, not through
perfkit.bench's `threads=`), so the same script measures the old and the new timer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

TARGETS = {"torch.empty(1)": 0.10, "lambda: None": 0.50, "matmul 256x256 fp32": 0.02}


def cases() -> dict[str, Callable[[], Any]]:
    import torch

    a = torch.randn(256, 256)
    b = torch.randn(256, 256)
    return {
        "torch.empty(1)": lambda: torch.empty(1),
        "lambda: None": lambda: None,
        "matmul 256x256 fp32": lambda: a @ b,
    }


def perfkit_median_s(fn: Callable[[], Any], budget_s: float) -> tuple[float, int]:
    import perfkit

    m = perfkit.bench(fn, warmup_s=0.05, budget_s=budget_s)
    return m.median_s, int(getattr(m, "calls_per_sample", 1))


def torch_median_s(fn: Callable[[], Any], budget_s: float, adaptive: bool) -> float:
    from torch.utils.benchmark import Timer

    timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=1)
    if adaptive:
        return float(timer.adaptive_autorange(threshold=0.01, min_run_time=0.01, max_run_time=budget_s).median)
    return float(timer.blocked_autorange(min_run_time=budget_s).median)


def run(rounds: int, budget_s: float) -> list[dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    rows = []
    for name, fn in cases().items():
        pk: list[float] = []
        blocked: list[float] = []
        adaptive: list[float] = []
        ks: list[int] = []

        def perfkit_once(fn: Callable[[], Any] = fn, out: list[float] = pk, ks: list[int] = ks) -> None:
            median, k = perfkit_median_s(fn, budget_s)
            out.append(median)
            ks.append(k)

        def torch_once(fn: Callable[[], Any] = fn, b: list[float] = blocked, a: list[float] = adaptive) -> None:
            b.append(torch_median_s(fn, budget_s, adaptive=False))
            a.append(torch_median_s(fn, budget_s, adaptive=True))

        # ABBA: a drift in the machine's load or clocks hits both timers alike
        for r in range(rounds):
            for once in ((perfkit_once, torch_once) if r % 2 == 0 else (torch_once, perfkit_once)):
                once()
        pk_med, bl_med, ad_med = statistics.median(pk), statistics.median(blocked), statistics.median(adaptive)
        # the ratio of each round's pair (measured back to back), then their median: a callable
        # whose own speed switches between states for seconds (torch.empty here) is compared
        # within one state, not one timer's median state against the other's
        paired = statistics.median(p / b for p, b in zip(pk, blocked, strict=True))
        paired_adaptive = statistics.median(p / a for p, a in zip(pk, adaptive, strict=True))
        row = {
            "case": name, "target": TARGETS[name],
            "perfkit_median_s": pk_med, "blocked_median_s": bl_med, "adaptive_median_s": ad_med,
            "ratio": paired, "ratio_adaptive": paired_adaptive,
            "ratio_of_medians": pk_med / bl_med,
            "calls_per_sample": sorted(set(ks)),
            "perfkit_rounds_s": pk, "blocked_rounds_s": blocked, "adaptive_rounds_s": adaptive,
        }
        rows.append(row)
        print(f"{name}: perfkit {pk_med * 1e9:.1f} ns (calls_per_sample {row['calls_per_sample']}), "
              f"blocked_autorange {bl_med * 1e9:.1f} ns, adaptive_autorange {ad_med * 1e9:.1f} ns, "
              f"paired ratio (median of rounds) {row['ratio']:.3f} / {row['ratio_adaptive']:.3f}, "
              f"ratio of medians {row['ratio_of_medians']:.3f} "
              f"(target within {TARGETS[name]:.0%})", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget-s", type=float, default=0.5, help="per timer and round")
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--smoke", action="store_true", help="one round of 20 ms budgets; exit 0 (checks the script)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.budget_s = 1, 0.02
    import perfkit

    load_before = os.getloadavg()
    rows = run(args.rounds, args.budget_s)
    load_after = os.getloadavg()
    within = all(abs(r["ratio"] - 1) <= r["target"] for r in rows)
    print(f"perfkit from {os.path.dirname(perfkit.__file__)}; load average before "
          f"{load_before[0]:.2f}, after {load_after[0]:.2f} (1 min); all within target: {within}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"perfkit": perfkit.__file__, "load_before": load_before, "load_after": load_after,
                       "rounds": args.rounds, "budget_s": args.budget_s, "rows": rows}, fh, indent=1)
    return 0 if within or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
