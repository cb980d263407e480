"""The regression calls of benchmarks/gate_round3.py one by one, and what each candidate rule
against BH's false calls beside real regressions would keep.

    .venv/bin/python -m benchmarks.gate_round3_calls --gates 25        # every cell; writes results
    .venv/bin/python -m benchmarks.gate_round3_calls --gates 25 --seed-base 31000   # held-out draws
    .venv/bin/python -m benchmarks.gate_round3_calls --gates 2 --cell gaussian --no-write

Draws the gates of gate_round3 (same cells, same seeds 9000+), judged with the effect floor OFF
(min_effect_spreads 0: the gate as it was), and records every metric called regressed and every
really moved one: its change d (log), the test's standard error and df, the run-to-run spread,
raw and adjusted p, the level it was tested against. Then each candidate rule, applied to those
calls, gives the cell's false regressions per 1,000 unchanged metrics, recall at +5% and the
false share in the changed gates:

- floor c: also |d| >= c x the run-to-run spread (effect_floor.py, min_effect_spreads);
- q: BH at a smaller q (adjusted p <= q);
- bky: Benjamini-Krieger-Yekutieli's two-stage BH (q / (1 + q), the share of nulls estimated
  from the first stage's calls).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import gate_round3 as g  # noqa: E402
from benchmarks.gate_scale import _history, _side  # noqa: E402
from perfkit.regression.gate.compare import compare_runs  # noqa: E402
from perfkit.regression.gate.types import MetricPolicy, Verdict  # noqa: E402

OFF = replace(g.STRICT, defaults=replace(MetricPolicy(), min_effect_spreads=0.0))
RULES = ("none", "floor 3.5", "floor 4", "floor 4.5", "floor 5", "q 0.03", "q 0.025", "bky")


def calls(cell: g.Cell, seed: int) -> list[dict[str, Any]]:
    """The called and the moved metrics of one draw, both gates (all unchanged, with the PR's)."""
    x = g.draw(cell, seed)
    names = [f"m{i:04d}:time_s" for i in range(x.shape[1])]
    out = []
    for changed in (False, True):
        moved = np.zeros(g.METRICS, dtype=bool)
        if changed:
            moved[: cell.regressions] = True
            x[-1, moved] *= 1.0 + g.EFFECT
        hist = _history(x[:-1], names)
        res = compare_runs(_side(f"r{x.shape[0] - 2}", names, x[-2]), _side("cand", names, x[-1]),
                           hist.__getitem__, policy=OFF)
        for i, c in enumerate(res.comparisons):
            if moved[i] or c.verdict == Verdict.REGRESSED:
                out.append({"seed": seed, "changed": changed, "moved": bool(moved[i]),
                            "regressed": c.verdict == Verdict.REGRESSED, "d": math.log(c.ratio), "se": c.se_log,
                            "df": c.df, "spread": c.run_spread, "p_raw": c.p_raw, "p": c.p_value,
                            "history_runs": c.history_runs, "level_runs": c.baseline_runs, "note": c.note})
    return out


def run_cell(args: tuple[g.Cell, int, int]) -> dict[str, Any]:
    cell, gates, base = args
    return {"cell": cell.name, "gates": gates, "regressions": cell.regressions, "seed_base": base,
            "calls": [r for s in range(gates) for r in calls(cell, base + s)]}


def keeps(rule: str, rows: Sequence[dict[str, Any]]) -> Callable[[dict[str, Any]], bool]:
    """Whether a call survives the rule."""
    if rule.startswith("floor"):
        c = float(rule.split()[1])
        return lambda r: abs(r["d"]) >= c * r["spread"]
    if rule.startswith("q"):
        q = float(rule.split()[1])
        return lambda r: r["p"] <= q
    if rule != "bky":
        return lambda r: True
    q = 0.05  # bky: stage 1 at q / (1 + q) calls r1; stage 2 at q / (1 + q) x m / (m - r1)
    first: dict[tuple[int, bool], int] = {}
    for r in rows:
        if r["regressed"] and r["p"] <= q / (1 + q):
            first[(r["seed"], r["changed"])] = first.get((r["seed"], r["changed"]), 0) + 1
    return lambda r: r["p"] <= q / (1 + q) * g.METRICS / max(g.METRICS - first.get((r["seed"], r["changed"]), 0), 1)


def measures(row: dict[str, Any], rule: str) -> tuple[float, float, float]:
    """(false regressions per 1,000 unchanged, recall at +5%, false share in the changed gates)."""
    rows = [r for r in row["calls"] if r["regressed"]]
    keep = keeps(rule, row["calls"])
    kept = [r for r in rows if keep(r)]
    unchanged = row["gates"] * (2 * g.METRICS - row["regressions"])
    false = sum(1 for r in kept if not r["moved"])
    false_c = sum(1 for r in kept if not r["moved"] and r["changed"])
    hits = sum(1 for r in kept if r["moved"])
    return 1000.0 * false / unchanged, hits / (row["gates"] * row["regressions"]), false_c / max(false_c + hits, 1)


def report(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["# The calls of gate_round3, one by one (benchmarks/gate_round3_calls.py)", "",
             f"{rows[0]['gates']} gate pairs per cell (seeds {rows[0]['seed_base']}+"
             f"{', the first of gate_round3' + chr(39) + 's' if rows[0]['seed_base'] == g.SEED_BASE else ', held out'}), "
             "judged with the effect "
             "floor off. Each entry: false regressions per 1,000 unchanged / recall at +5% / false share in the "
             "changed gates, when the calls must also pass the rule.", "",
             "| cell | " + " | ".join(RULES) + " |", "|---|" + "---|" * len(RULES)]
    for row in rows:
        lines.append(f"| {row['cell']} | " + " | ".join("{:.2f} / {:.3f} / {:.3f}".format(*measures(row, r))
                                                          for r in RULES) + " |")
    lines += ["", "The false calls of the Gaussian, wander and creep cells (floor off): change in run-to-run sds, "
              "t, df, raw and adjusted p, the level it was tested against:", "",
              "| cell | seed | gate | change | sds | t | df | p raw | p adj | level |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        if row["cell"] not in ("gaussian", "wander, 30 runs", "creep, 30 runs", "wander, 12 runs"):
            continue
        for r in row["calls"]:
            if r["regressed"] and not r["moved"]:
                lines.append(f"| {row['cell']} | {r['seed']} | {'with PR' if r['changed'] else 'unchanged'} | "
                             f"{math.expm1(r['d']) * 100:+.2f}% | {r['d'] / r['spread']:.2f} | {r['d'] / r['se']:.2f} | "
                             f"{r['df']:.0f} | {r['p_raw']:.2g} | {r['p']:.2g} | {r['level_runs']} of "
                             f"{r['history_runs']} runs{', segmented' if 'since a step' in r['note'] else ''}"
                             f"{', on a trend' if 'trend' in r['note'] else ''} |")
    lines += ["", "The real +5% calls (floor off), change in run-to-run sds: minimum / 2% / 5% / 10% quantile:", "",
              "| cell | min | 2% | 5% | 10% |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        z = [r["d"] / r["spread"] for r in row["calls"] if r["regressed"] and r["moved"]]
        if z:
            q = np.percentile(z, [0, 2, 5, 10])
            lines.append(f"| {row['cell']} | " + " | ".join(f"{v:.2f}" for v in q) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gates", type=int, default=25, help="gate pairs per cell (default 25)")
    ap.add_argument("--cell", action="append", default=[], metavar="NAME", help="only this cell (repeatable)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed-base", type=int, default=g.SEED_BASE,
                    help=f"first seed (default {g.SEED_BASE}, gate_round3's; another: held-out draws)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    cells = [c for c in g.CELLS if not args.cell or c.name in args.cell]
    if not cells:
        print(f"gate_round3_calls: --cell: unknown {args.cell}; cells: {[c.name for c in g.CELLS]}", file=sys.stderr)
        return 2
    with mp.get_context("fork").Pool(args.workers) as pool:
        rows = pool.map(run_cell, [(c, args.gates, args.seed_base) for c in cells], chunksize=1)
    text = report(rows)
    print(text)
    if not args.no_write:
        stem = "gate_round3_calls-vm" if args.seed_base == g.SEED_BASE else f"gate_round3_calls-{args.seed_base}-vm"
        (args.out / f"{stem}.md").write_text(text)
        (args.out / f"{stem}.json").write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
