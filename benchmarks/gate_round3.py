"""The gate where CI meets it every week: main's own step, a noisier runner, wander and creep,
outlier runs, clock states, heavy tails; perfkit beside Conbench's z > 5 on the same draws.

    .venv/bin/python -m benchmarks.gate_round3            # full (~10 min on 2 cores); writes results
    .venv/bin/python -m benchmarks.gate_round3 --quick    # few gates per cell (CI smoke, ~1 min)
    .venv/bin/python -m benchmarks.gate_round3 --smoke    # tiny: the script end to end (seconds)

Every cell draws whole gates of 100 metrics, n = 3 samples per run (each metric its own noise
factor, log-uniform 0.5-2x; within-run noise 0.5%, run-to-run offsets 0.3% x factor: the model of
benchmarks/gate_noise.py), `commits` stored runs (the last is the baseline) and a candidate, and
judges each draw twice: all unchanged, and a pull request with 5 real +5% regressions (10 in the
stepped-baseline cells). Cells:

- gaussian, t3 (Student-t 3 df run offsets), bimodal (two clock states 3% x factor apart within
  runs): benchmarks/gate_cells.py's models;
- step j back: main slowed 20 metrics by 3% j runs before the candidate (j = 1: the baseline is
  the first run at the new level); the candidate is at main's new level;
- noisier candidate: the candidate's samples scatter 3x more (within-run only), or 3x more and
  its run offset is 3x larger (whole run);
- wander: an AR(1) level (phi 0.9, 0.6% sd) plus offsets; creep: +0.1% x factor per commit;
  with 12 and 30 stored runs;
- outlier runs: 10% of the runs land 1-3% x factor slow (one-sided);
- clock states: 25% of the runs run all their samples in a slow state 3% x factor slower.

Rules on the same data: perfkit (default policy), perfkit strict (fail_on: [regressed, noisy,
suspect]), the usable strict policy (the same with known_noise_fails: false) and Conbench's z > 5 (candidate run mean vs the stored runs' means). Measured per cell:
false regressions per 1,000 unchanged metrics (both gates of a draw), recall at +5%, the false share
of the listed regressions in the changed gates, the share of all-unchanged gates failed, and where
they apply: the stepped unchanged metrics called regressed, the all-unchanged gates whose headline
names the cause. Each number is the median over seed blocks (--blocks) and the pooled value.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.gate_noise import BETWEEN, scale_levels, scale_samples  # noqa: E402
from benchmarks.gate_scale import _history, _side  # noqa: E402
from perfkit.regression.gate.compare import GateResult, compare_runs  # noqa: E402
from perfkit.regression.gate.policy import GatePolicy  # noqa: E402
from perfkit.regression.gate.types import Verdict  # noqa: E402
from perfkit.reports.gate.format import status_text  # noqa: E402

RULES = ("perfkit", "strict", "strict_usable", "z5")
STRICT = GatePolicy(fail_on=("regressed", "noisy", "suspect"))
METRICS, N, EFFECT, STEP, STEPPED = 100, 3, 0.05, 0.03, 20
SEED_BASE = 9000  # seeds no other benchmark uses


@dataclass(frozen=True)
class Cell:
    name: str
    model: str  # gaussian | t3 | bimodal | wander | creep | outliers | clocks
    commits: int = 12  # stored runs, the baseline the last
    step_back: int = 0  # main's +3% step j runs before the candidate (0: none)
    noisier: str = ""  # "" | "within" | "whole": the candidate's noise x 3
    regressions: int = 5


CELLS = (
    Cell("gaussian", "gaussian"),
    Cell("t3", "t3"),
    Cell("bimodal", "bimodal"),
    *(Cell(f"step {j} back", "gaussian", step_back=j, regressions=10) for j in (1, 2, 3, 4, 6)),
    Cell("noisier, within-run", "gaussian", noisier="within"),
    Cell("noisier, whole run", "gaussian", noisier="whole"),
    Cell("wander, 12 runs", "wander"),
    Cell("wander, 30 runs", "wander", commits=30),
    Cell("creep, 12 runs", "creep"),
    Cell("creep, 30 runs", "creep", commits=30),
    Cell("outlier runs", "outliers"),
    Cell("clock states", "clocks"),
)
QUICK_CELLS = ("gaussian", "t3", "step 1 back", "noisier, whole run", "wander, 30 runs", "clock states")


def levels_of(cell: Cell, runs: int, factor: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(runs, metrics) log levels before any real change (the candidate the last row)."""
    m = factor.size
    if cell.model == "t3":
        return rng.standard_t(3.0, (runs, m)) / math.sqrt(3.0) * (2.0 * BETWEEN * factor)
    if cell.model == "wander":
        return scale_levels("drift", runs, factor, rng)
    base = scale_levels("gaussian", runs, factor, rng)
    if cell.model == "creep":
        return base + 0.001 * np.arange(runs)[:, None] * factor
    if cell.model == "outliers":
        hit = rng.random((runs, m)) < 0.10
        return base + np.where(hit, rng.uniform(0.01, 0.03, (runs, m)) * factor, 0.0)
    if cell.model == "clocks":
        return base + np.where(rng.random((runs, m)) < 0.25, math.log1p(0.03) * factor, 0.0)
    return base


def draw(cell: Cell, seed: int) -> np.ndarray:
    """(commits + 1, metrics, n) samples: the stored runs (baseline last) and the candidate."""
    rng = np.random.default_rng([43, zlib.crc32(cell.name.encode()), seed])
    factor = np.exp(rng.uniform(math.log(0.5), math.log(2.0), METRICS))
    runs = cell.commits + 1
    lv = levels_of(cell, runs, factor, rng)
    if cell.noisier == "whole":
        lv[-1] *= 3.0
    if cell.step_back:
        lv[runs - 1 - cell.step_back :, stepped(cell)] += math.log1p(STEP)
    sample_model = "bimodal" if cell.model == "bimodal" else "gaussian"
    x = scale_samples(sample_model, N, lv, factor, rng)
    if cell.noisier:  # the candidate's samples scatter 3x more about its level
        level = np.exp(lv[-1])[:, None] * 1e-3
        x[-1] = level + 3.0 * (x[-1] - level)
    return np.maximum(x, 1e-9)


def stepped(cell: Cell) -> np.ndarray:
    """Metrics main stepped (not among the pull request's regressions)."""
    out = np.zeros(METRICS, dtype=bool)
    if cell.step_back:
        out[cell.regressions : cell.regressions + STEPPED] = True
    return out


def judge(x: np.ndarray) -> tuple[dict[str, np.ndarray], GateResult]:
    names = [f"m{i:04d}:time_s" for i in range(x.shape[1])]
    stored = x[:-1]
    hist = _history(stored, names)
    result = compare_runs(_side(f"r{stored.shape[0] - 1}", names, x[-2]), _side("cand", names, x[-1]),
                          lambda nm: hist[nm], policy=STRICT)
    verdict = np.array([c.verdict.value for c in result.comparisons])
    known = np.array([c.known_noise for c in result.comparisons])
    means = x.mean(axis=2)
    ref = means[:-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (means[-1] - ref.mean(axis=0)) / ref.std(axis=0, ddof=1)
    strict = np.isin(verdict, STRICT.fail_on)
    return {"perfkit": verdict == Verdict.REGRESSED.value, "strict": strict, "strict_usable": strict & ~known,
            "z5": z > 5.0}, result


CAUSES = {"noisier": "noisier than its history", "step": "baseline itself moved"}


def gate_pair(cell: Cell, seed: int) -> dict[str, Any]:
    """One draw judged all unchanged and with the pull request's regressions: counts per rule."""
    x = draw(cell, seed)
    step = stepped(cell)
    calls, result = judge(x)
    out: dict[str, Any] = {"unchanged": METRICS, "changed": 0}
    out["false"] = {r: int(calls[r].sum()) for r in RULES}
    out["fail_null"] = {r: int(calls[r].any()) for r in RULES}
    out["step_null"] = {r: int(calls[r][step].sum()) for r in RULES}
    cause = CAUSES["noisier"] if cell.noisier else CAUSES["step"] if cell.step_back else ""
    default = replace(result, policy=GatePolicy())  # the default policy's headline
    out["named"] = int(bool(cause) and cause in status_text(default))
    out["outcome_null"] = default.outcome
    moved = np.zeros(METRICS, dtype=bool)
    moved[: cell.regressions] = True
    x[-1, moved] *= 1.0 + EFFECT
    calls, _ = judge(x)
    out["unchanged"] += int((~moved).sum())
    out["changed"] = int(moved.sum())
    for r in RULES:
        false = int(calls[r][~moved].sum())
        out["false"][r] += false
        out.setdefault("false_changed", {})[r] = false
        out.setdefault("hits", {})[r] = int(calls[r][moved].sum())
        out.setdefault("step_changed", {})[r] = int(calls[r][step].sum())
    out["stepped"] = int(step.sum())
    return out


def _rates(rows: Sequence[dict[str, Any]], rule: str) -> dict[str, float]:
    """The cell's measures for one rule over these gate pairs (pooled)."""
    g = len(rows)
    unchanged = sum(r["unchanged"] for r in rows)
    changed = sum(r["changed"] for r in rows)
    false_c = sum(r["false_changed"][rule] for r in rows)
    hits = sum(r["hits"][rule] for r in rows)
    stepped_n = sum(r["stepped"] for r in rows)
    out = {"false_per_1000": 1000.0 * sum(r["false"][rule] for r in rows) / unchanged,
           "recall_5pct": hits / changed if changed else math.nan,
           "false_share": false_c / (false_c + hits) if false_c + hits else 0.0,
           "fail_unchanged": sum(r["fail_null"][rule] for r in rows) / g}
    if stepped_n:
        out["stepped_called_unchanged_gate"] = sum(r["step_null"][rule] for r in rows) / stepped_n
        out["stepped_called_changed_gate"] = sum(r["step_changed"][rule] for r in rows) / stepped_n
    return out


def run_cell(args: tuple[Cell, int, int]) -> dict[str, Any]:
    cell, gates, blocks = args
    t0 = time.perf_counter()
    rows = [gate_pair(cell, SEED_BASE + g) for g in range(gates)]
    per = max(gates // blocks, 1)
    chunks = [rows[i : i + per] for i in range(0, gates, per)][:blocks]
    pooled = {r: _rates(rows, r) for r in RULES}
    median = {r: {k: float(np.median([_rates(c, r)[k] for c in chunks])) for k in pooled[r]} for r in RULES}
    outcomes: dict[str, int] = {}
    for r in rows:
        outcomes[r["outcome_null"]] = outcomes.get(r["outcome_null"], 0) + 1
    return {"cell": cell.name, "model": cell.model, "commits": cell.commits, "step_back": cell.step_back,
            "noisier": cell.noisier, "gates": gates, "blocks": len(chunks), "pooled": pooled, "median": median,
            "named_cause": sum(r["named"] for r in rows) / gates,
            "outcomes_unchanged": {k: v / gates for k, v in sorted(outcomes.items())},
            "seconds": time.perf_counter() - t0}


MEASURES = (("false_per_1000", "false regressions / 1,000 unchanged", "{:.2f}"),
            ("recall_5pct", "recall at +5%", "{:.2f}"),
            ("false_share", "false share of listed regressions", "{:.3f}"),
            ("fail_unchanged", "all-unchanged gates failed", "{:.3f}"),
            ("stepped_called_changed_gate", "stepped metrics called regressed (PR with regressions)", "{:.3f}"),
            ("stepped_called_unchanged_gate", "stepped metrics called regressed (unchanged PR)", "{:.3f}"))


def report(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# The gate, round three (benchmarks/gate_round3.py)", "",
             f"Machine: {meta['machine']}. {meta['gates']} gate pairs per cell in {meta['blocks']} seed blocks; "
             f"wall time {meta['seconds']:.0f} s.", "",
             "Each entry: median over seed blocks (pooled over all gates). perfkit = default policy; strict = "
             "fail_on [regressed, noisy, suspect]; usable strict = the same with known_noise_fails: false; z>5 = "
             "Conbench's rule on the same draws.", "",
             "| cell | measure | perfkit | strict | usable strict | z>5 |", "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        first = True
        for key, label, fmt in MEASURES:
            if key not in row["pooled"]["perfkit"]:
                continue
            cells = [f"{fmt.format(row['median'][r][key])} ({fmt.format(row['pooled'][r][key])})" for r in RULES]
            lines.append(f"| {row['cell'] if first else ''} | {label} | " + " | ".join(cells) + " |")
            first = False
    lines += ["", "Headlines of the all-unchanged gates (default policy), and how often they name the cause "
              "(noisier cells: \"noisier than its history\"; step cells: \"baseline itself moved\"):", "",
              "| cell | outcomes | cause named |", "|---|---|---:|"]
    for row in rows:
        o = ", ".join(f"{k} {v:.2f}" for k, v in row["outcomes_unchanged"].items())
        named = f"{row['named_cause']:.2f}" if row["noisier"] or row["step_back"] else "-"
        lines.append(f"| {row['cell']} | {o} | {named} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the CI smoke: 6 cells, 10 gate pairs each")
    ap.add_argument("--smoke", action="store_true", help="tiny: 2 cells, 2 gate pairs; writes nothing")
    ap.add_argument("--gates", type=int, default=None, help="gate pairs per cell (default 200)")
    ap.add_argument("--blocks", type=int, default=5, help="seed blocks the medians are taken over")
    ap.add_argument("--cell", action="append", default=[], metavar="NAME", help="only this cell (repeatable)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--machine", default="2-core VM", help="what the results file says the machine was")
    args = ap.parse_args(argv)
    names = {c.name for c in CELLS}
    if set(args.cell) - names:
        print(f"gate_round3: --cell: unknown {sorted(set(args.cell) - names)}; cells: {sorted(names)}",
              file=sys.stderr)
        return 2
    chosen = args.cell or (["gaussian", "step 1 back"] if args.smoke else QUICK_CELLS if args.quick else list(names))
    gates = args.gates or (2 if args.smoke else 10 if args.quick else 200)
    blocks = min(args.blocks, gates)
    cells = [c for c in CELLS if c.name in chosen]
    t0 = time.time()
    with mp.get_context("fork").Pool(args.workers) as pool:
        rows = pool.map(run_cell, [(c, gates, blocks) for c in cells], chunksize=1)
    meta = {"machine": args.machine, "gates": gates, "blocks": blocks, "seconds": time.time() - t0}
    text = report(rows, meta)
    print(text)
    if not (args.quick or args.smoke):
        path = args.out / "gate_round3-vm.json"
        old = json.loads(path.read_text())["cells"] if path.exists() and args.cell else []
        by = {r["cell"]: r for r in old}
        by.update({r["cell"]: r for r in rows})
        merged = [by[c.name] for c in CELLS if c.name in by]
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"meta": meta, "cells": merged}, indent=1))
        (args.out / "gate_round3-vm.md").write_text(report(merged, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
