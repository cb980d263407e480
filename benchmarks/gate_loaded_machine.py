"""The gate without history on real runs of an unchanged micro-benchmark on this machine.

    .venv/bin/python -m benchmarks.gate_loaded_machine --runs 16 --gap-s 20    # ~6 min
    .venv/bin/python -m benchmarks.gate_loaded_machine --smoke                 # 3 runs, no gap, no write

Runs `sorted(100 floats)` (30 rounds of 2000 calls, us per call) in --runs separate processes,
--gap-s seconds apart, the same code every time: every difference between the runs is the
machine's (load from other jobs, frequency, caches). Then gates every pair of runs (earlier as
baseline) with no history, under the fixed 1% prior (assumed_spread_factor 0, the previous
behaviour) and the default prior (2 x the runs' sample spread, floor 1%), and prints how many
pairs each calls regressed / improved / noisy / unchanged: every regressed or improved is a
false alarm. Writes benchmarks/results/gate_loaded_machine-<machine>.md and .json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_quality import machine  # noqa: E402
from perfkit.core.direction import LOWER  # noqa: E402
from perfkit.regression.gate.robust import trimmed_mean, winsorized_sd  # noqa: E402
from perfkit.regression.gate.stats import compare_samples  # noqa: E402
from perfkit.regression.gate.types import MetricPolicy, Verdict  # noqa: E402

CHILD = """
import json, random, time
random.seed(0); data = [random.random() for _ in range(100)]
out = []
for _ in range(30):
    t0 = time.perf_counter()
    for _ in range(2000):
        sorted(data)
    out.append((time.perf_counter() - t0) / 2000)
print(json.dumps(out))
"""


def one_run() -> list[float]:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    return [float(x) for x in json.loads(done.stdout)]


def tally(runs: Sequence[Sequence[float]], pol: MetricPolicy) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for k, (i, j) in enumerate(itertools.combinations(range(len(runs)), 2)):
        counts[compare_samples("sorted:time_s", runs[i], runs[j], LOWER, (), pol, seed=k).verdict.value] += 1
    return {v.value: counts[v.value] for v in Verdict if v != Verdict.INCOMPARABLE}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--gap-s", type=float, default=20.0)
    ap.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results; --smoke: none)")
    ap.add_argument("--smoke", action="store_true", help="3 runs, no gap: checks the script; writes no results")
    args = ap.parse_args(argv)
    if args.smoke:
        args.runs, args.gap_s = 3, 0.0
    out_dir = args.out or (None if args.smoke else REPO / "benchmarks" / "results")
    runs: list[list[float]] = []
    for r in range(args.runs):
        if r:
            time.sleep(args.gap_s)
        runs.append(one_run())
    logs = [np.log(r) for r in runs]
    locs = np.array([trimmed_mean(x) for x in logs])
    spread = np.array([winsorized_sd(x) for x in logs])
    fixed, prior = tally(runs, MetricPolicy(assumed_spread_factor=0.0)), tally(runs, MetricPolicy())
    pairs = len(runs) * (len(runs) - 1) // 2
    lines = ["# Gate without history on an unchanged micro-benchmark (benchmarks/gate_loaded_machine.py)", "",
             f"Machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the end. {len(runs)} runs of "
             f"`sorted(100 floats)`, {args.gap_s:g} s apart; every pair gated with no history ({pairs} pairs).", "",
             f"Run locations (20%-trimmed mean): {np.exp(locs.min()) * 1e6:.2f}-{np.exp(locs.max()) * 1e6:.2f} us; "
             f"sd of log locations {locs.std(ddof=1):.3f}; mean winsorized sample sd {spread.mean():.3f} "
             f"(ratio {locs.std(ddof=1) / spread.mean():.2f}).", "",
             "| prior | regressed | improved | noisy | unchanged | false alarms |", "|---|---:|---:|---:|---:|---:|"]
    for name, t in (("fixed 1% (assumed_spread_factor 0)", fixed), ("default: max(1%, 2 x sample spread)", prior)):
        alarms = t["regressed"] + t["improved"]
        lines.append(f"| {name} | {t['regressed']} | {t['improved']} | {t['noisy']} | {t['unchanged']} | "
                     f"{alarms} ({alarms / pairs:.1%}) |")
    text = "\n".join(lines) + "\n"
    print(text)
    if out_dir is None:
        return 0
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = "".join(ch if ch.isalnum() else "-" for ch in platform.node() or "machine")[:40]
    (out_dir / f"gate_loaded_machine-{tag}.md").write_text(text)
    (out_dir / f"gate_loaded_machine-{tag}.json").write_text(json.dumps(
        {"runs_s": runs, "fixed_prior": fixed, "default_prior": prior, "gap_s": args.gap_s}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
