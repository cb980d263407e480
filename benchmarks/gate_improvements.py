"""Pull requests that only improve things: how often does the gate fail them?

Run:  PYTHONPATH=. OMP_NUM_THREADS=1 python -m benchmarks.gate_improvements [--seeds 24] [--out FILE]
      ... --smoke   (2 seeds of 100 metrics; targets not judged)

Each gate: 1,000 metrics (each with its own noise factor, log-uniform 0.5-2x), n = 3 samples per
run, 12 earlier commits of history (one run each, the last is the baseline), Gaussian noise
(benchmarks/gate_noise.py's "gaussian" scale model). Two kinds of pull request on the same data:
- all unchanged: nothing changes;
- improvement-only: 5% of the metrics get 5% faster, none slower.
A gate FAILS when any metric is called regressed. Three rules judge every gate:
- perfkit: the gate as it is (perfkit.regression.gate.compare.compare_runs, default policy:
  Benjamini-Hochberg over two direction families, regressions and improvements apart);
- perfkit, one family (the rule before this change, recomputed here from the same p-values:
  BH over the two-sided p-values of all metrics at once, improvements included);
- Conbench-style z > 5: candidate run mean vs the history of run means.
Printed: the share of gates failed per rule and kind, with its standard error, over the held-out
seeds (seeds 1000 + i: not the seeds the gate's defaults were tuned on). Target (issue 30):
improvement-only gates fail no more often than all-unchanged ones and than z > 5.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_noise import scale_levels, scale_samples  # noqa: E402
from benchmarks.gate_scale import HISTORY_COMMITS, _history, _side  # noqa: E402
from perfkit.regression.gate.compare import compare_runs  # noqa: E402
from perfkit.regression.gate.decide import verdict_reason  # noqa: E402
from perfkit.regression.gate.multiple import adjust_p_values  # noqa: E402
from perfkit.regression.gate.types import Verdict  # noqa: E402

RULES = ("perfkit", "perfkit_one_family", "conbench_z5")
KINDS = ("unchanged", "improvement_only")
SHARE, GAIN = 0.05, 0.05
SEED_BASE = 1000


def _one_family(comparisons: Any) -> np.ndarray:
    """The regression calls of the earlier rule: BH over every two-sided p-value at once."""
    tested = [c for c in comparisons if c.verdict != Verdict.INCOMPARABLE and math.isfinite(c.p_raw)]
    adjusted = adjust_p_values([c.p_raw for c in tested], "bh")
    by_metric = {c.metric: verdict_reason(c, p, len(tested))[0] for c, p in zip(tested, adjusted, strict=True)}
    return np.array([by_metric.get(c.metric) == Verdict.REGRESSED for c in comparisons])


def gate(x: np.ndarray) -> dict[str, bool]:
    """Whether each rule fails the gate (x: runs x metrics x samples; the last run the candidate)."""
    m = x.shape[1]
    names = [f"m{i:04d}:time_s" for i in range(m)]
    hist = _history(x[:-1], names)
    result = compare_runs(_side(f"r{x.shape[0] - 2}", names, x[-2]), _side("cand", names, x[-1]),
                          lambda nm: hist[nm])
    means = x.mean(axis=2)
    ref = means[:-1]
    z = (means[-1] - ref.mean(axis=0)) / ref.std(axis=0, ddof=1)
    return {"perfkit": any(c.verdict == Verdict.REGRESSED for c in result.comparisons),
            "perfkit_one_family": bool(_one_family(result.comparisons).any()),
            "conbench_z5": bool((z > 5.0).any())}


def trial(m: int, n: int, seed: int) -> dict[str, dict[str, bool]]:
    rng = np.random.default_rng([37, zlib.crc32(b"improvements"), m, n, seed])
    factor = np.exp(rng.uniform(math.log(0.5), math.log(2.0), m))
    levels = scale_levels("gaussian", HISTORY_COMMITS + 1, factor, rng)
    x = scale_samples("gaussian", n, levels, factor, rng)
    out = {"unchanged": gate(x)}
    better = np.zeros(m)
    better[: max(int(m * SHARE), 1)] = GAIN
    x[-1] *= (1.0 - better)[:, None]
    out["improvement_only"] = gate(x)
    return out


def run(seeds: int, m: int, n: int) -> dict[str, Any]:
    fails = {k: dict.fromkeys(RULES, 0) for k in KINDS}
    for i in range(seeds):
        got = trial(m, n, SEED_BASE + i)
        for kind in KINDS:
            for rule in RULES:
                fails[kind][rule] += int(got[kind][rule])
    share = {k: {r: fails[k][r] / seeds for r in RULES} for k in KINDS}
    pk = share["improvement_only"]["perfkit"]
    met = pk <= share["unchanged"]["perfkit"] + 1e-12 and pk <= share["improvement_only"]["conbench_z5"] + 1e-12
    return {"seeds": seeds, "metrics": m, "n": n, "fail_share": share, "target_met": met}


def _se(p: float, k: int) -> float:
    return math.sqrt(p * (1 - p) / k) if k else 0.0


def table(res: dict[str, Any]) -> str:
    k = res["seeds"]
    lines = ["| pull request | perfkit | perfkit, one family (before) | Conbench z > 5 |", "|---|---:|---:|---:|"]
    for kind in KINDS:
        cells = [f"{res['fail_share'][kind][r]:.2f} +- {_se(res['fail_share'][kind][r], k):.2f}" for r in RULES]
        lines.append(f"| {kind.replace('_', '-')} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"target (improvement-only fails no more often than unchanged and than z > 5): {res['target_met']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=24)
    ap.add_argument("--metrics", type=int, default=1000)
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write FILE.md and FILE.json")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if args.smoke:
        args.seeds, args.metrics = 2, 100
    res = run(args.seeds, args.metrics, args.n)
    text = (f"share of gates failed over {res['seeds']} held-out seeds; {res['metrics']} metrics, n = {res['n']}, "
            f"{HISTORY_COMMITS} commits of history, gaussian noise; improvement-only: {SHARE:.0%} of the "
            f"metrics {GAIN:.0%} faster\n\n" + table(res))
    print(text)
    if args.out:
        args.out.with_suffix(".md").write_text(
            "# Gate: improvement-only pull requests (benchmarks/gate_improvements.py)\n\n"
            f"`python -m benchmarks.gate_improvements --seeds {args.seeds}` on {os.uname().nodename}\n\n" + text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
