"""Gate and change-point quality on seeded synthetic data, against Apache Otava and asv.

    python3 -m venv .venv-bench && .venv-bench/bin/pip install apache-otava asv   # once
    .venv-bench/bin/python -m benchmarks.gate_quality            # full (~8-12 min on 2 cores)
    .venv-bench/bin/python -m benchmarks.gate_quality --quick    # few trials (~30 s)
    .venv/bin/python -m benchmarks.gate_quality --smoke          # tiny: the script end to end (seconds)

Part 1, the two-sample gate (perfkit/regression/gate/stats.py, default policy: max_p 0.05, min_effect 1%):
for each noise model of benchmarks/gate_noise.py and n = 5, 10, 30 samples per run, 20 earlier
runs of the same code form the history, the last of them is the baseline, and the candidate is
the next run with a true slowdown of 0, 1, 2, 5 or 10%. Reported: the share of trials the gate
calls a regression (false-positive rate at 0%, power above). For reference, the same trials
through a per-sample Mann-Whitney test (p < 0.05, slower) - what a gate without run history does.
Also the whole-gate false-alarm rate with 50 unchanged metrics, with and without the
Benjamini-Hochberg correction, and the gate with NO history (a single baseline run and a single
candidate run, each with its own between-run offset: the store is empty) for the gaussian,
bimodal and between-run-offset models: regression-call rate and share of "noisy" verdicts.

Part 2, change points (perfkit/regression/changepoint/detect.py, defaults: max_p 0.005, min_magnitude 0.5%):
series of 400 commits (one run of 10 samples per commit, its median) with 0-4 steps of
+-1, 2, 5 or 10% at least 30 commits apart; a detection within +-5 commits of a true step is a
hit (one-to-one). Reported per model: precision, recall, F1 and false alarms per 1000 commits,
for perfkit, Apache Otava's default analysis (window 50, max_pvalue 0.001), Otava with the same
1% minimum magnitude, and asv's step detection (asv.step_detect.detect_steps).

Part 3, the gate at scale (benchmarks/gate_scale.py): 100 and 1000 metrics, n = 1, 3, 5, 10
samples per commit, with 12 commits of history and without, five noise models; perfkit's whole
gate beside a Conbench-style z-score rule and a fixed 5% threshold on the same data; and the
smallest step perfkit finds in 90% of gates by noise level, samples and history (docs/ci.md).

    .venv/bin/python -m benchmarks.gate_quality --part scale   # part 3 only (no baselines needed)

Part 4, the cells of issue 30 (benchmarks/gate_cells.py): improvement-only pull requests, t3 run
offsets, bimodal single samples, drift, short histories, n = 1 without history, 1 / 100 / 1,000
metrics; perfkit (default and strict policy) beside Conbench z > 5 and z > 3, Welch and
Mann-Whitney with BH, and asv's 1.1x rule, in the same run.

    .venv/bin/python -m benchmarks.gate_quality --part cells --cells-gates 40   # part 4 only

Writes benchmarks/results/gate_quality-<machine>.md and .json (a --part run replaces its part
in an existing JSON and rewrites the Markdown from all parts).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import gate_cells, gate_scale  # noqa: E402
from benchmarks.gate_noise import MODELS, commit_series, run_offsets, run_samples  # noqa: E402
from perfkit.core.direction import LOWER  # noqa: E402
from perfkit.regression.changepoint.detect import detect_change_points  # noqa: E402
from perfkit.regression.gate.multiple import correct  # noqa: E402
from perfkit.regression.gate.robust import summarize_run  # noqa: E402
from perfkit.regression.gate.stats import compare_samples  # noqa: E402
from perfkit.regression.gate.types import Verdict  # noqa: E402

EFFECTS = (0.0, 0.01, 0.02, 0.05, 0.10)
SIZES = (5, 10, 30)
HISTORY = 20
TOLERANCE = 5
STEP_SIZES = (0.01, 0.02, 0.05, 0.10)


# --- part 1: the gate ---------------------------------------------------------------------------

def gate_cell(args: tuple[str, int, float, int]) -> dict[str, Any]:
    """Regression-call rate of perfkit and of a per-sample Mann-Whitney test for one cell."""
    from scipy.stats import mannwhitneyu

    model, n, effect, trials = args
    hits = naive = 0
    for t in range(trials):
        rng = np.random.default_rng([zlib.crc32(model.encode()), n, int(effect * 1000), t])
        levels = run_offsets(model, HISTORY + 1, rng)
        runs = [run_samples(model, n, levels[i], rng) for i in range(HISTORY)]
        cand = run_samples(model, n, levels[HISTORY] + math.log1p(effect), rng)
        hist = [summarize_run(r) for r in runs[:-1]]  # the baseline (runs[-1]) joins as the latest
        c = compare_samples("m", runs[-1].tolist(), cand.tolist(), LOWER, hist, seed=t)
        hits += c.verdict == Verdict.REGRESSED
        naive += mannwhitneyu(cand, runs[-1], alternative="greater").pvalue < 0.05
    return {"model": model, "n": n, "effect": effect, "trials": trials,
            "perfkit": hits / trials, "mann_whitney": naive / trials}


NO_HISTORY_MODELS = ("gaussian", "bimodal", "offset")
NO_HISTORY_EFFECTS = (0.0, 0.02, 0.05, 0.10, 0.20)


def no_history_cell(args: tuple[str, int, float, int]) -> dict[str, Any]:
    """The gate with no history: one baseline run and one candidate run made at different
    times (each with its own between-run offset), nothing else in the store."""
    model, n, effect, trials = args
    hits = noisy = 0
    for t in range(trials):
        rng = np.random.default_rng([23, zlib.crc32(model.encode()), n, int(effect * 1000), t])
        levels = run_offsets(model, 2, rng)
        base = run_samples(model, n, levels[0], rng)
        cand = run_samples(model, n, levels[1] + math.log1p(effect), rng)
        c = compare_samples("m", base.tolist(), cand.tolist(), LOWER, (), seed=t)
        hits += c.verdict == Verdict.REGRESSED
        noisy += c.verdict == Verdict.NOISY
    return {"model": model, "n": n, "effect": effect, "trials": trials,
            "perfkit": hits / trials, "noisy": noisy / trials}


def whole_gate(args: tuple[str, int, int]) -> dict[str, Any]:
    """Share of gates with >= 1 false regression among 50 unchanged metrics (n = 10)."""
    model, metrics, trials = args
    with_bh = without = 0
    for t in range(trials):
        rng = np.random.default_rng([7, zlib.crc32(model.encode()), t])
        comps = []
        for k in range(metrics):
            levels = run_offsets(model, HISTORY + 1, rng)
            runs = [run_samples(model, 10, levels[i], rng) for i in range(HISTORY)]
            cand = run_samples(model, 10, levels[HISTORY], rng)
            comps.append(compare_samples(f"m{k}", runs[-1].tolist(), cand.tolist(), LOWER, [summarize_run(r) for r in runs[:-1]],
                                         seed=k))
        without += any(c.verdict == Verdict.REGRESSED for c in comps)
        with_bh += any(c.verdict == Verdict.REGRESSED for c in correct(comps, "bh"))
    return {"model": model, "metrics": metrics, "trials": trials, "bh": with_bh / trials, "none": without / trials}


# --- part 2: change points ----------------------------------------------------------------------

SERIES_SEED = 11  # the reported change-point series (the detector was tuned on 98 and 99)


def make_series(model: str, index: int, n_commits: int, seed: int = SERIES_SEED) -> tuple[np.ndarray, list[int]]:
    y, cps, _ = series_with_steps(model, index, n_commits, seed)
    return y, cps


def series_with_steps(model: str, index: int, n_commits: int, seed: int = SERIES_SEED
                      ) -> tuple[np.ndarray, list[int], list[tuple[int, float]]]:
    """One change-point series, its change points and its steps (commit, relative size)."""
    rng = np.random.default_rng([seed, zlib.crc32(model.encode()), index])
    k = int(rng.integers(0, 5))
    cps: list[int] = []
    for _ in range(200):
        if len(cps) == k:
            break
        at = int(rng.integers(15, n_commits - 15))
        if all(abs(at - c) >= 30 for c in cps):
            cps.append(at)
    cps.sort()
    steps = [(c, float(rng.choice(STEP_SIZES)) * float(rng.choice((-1.0, 1.0)))) for c in cps]
    return commit_series(model, n_commits, steps, rng), cps, steps


def detectors() -> dict[str, Callable[[np.ndarray], list[int]]]:
    from asv.step_detect import detect_steps
    from otava.analysis import compute_change_points

    return {
        "perfkit": lambda y: [c.index for c in detect_change_points(y)],
        "otava": lambda y: [int(c.index) for c in compute_change_points(list(map(float, y)))[0]],
        "otava_min1pct": lambda y: [int(c.index) for c in compute_change_points(list(map(float, y)),
                                                                                min_magnitude=0.01)[0]],
        "asv": lambda y: [int(s[0]) for s in detect_steps(list(map(float, y)))[1:]],
    }


def match(truth: Sequence[int], found: Sequence[int], tol: int = TOLERANCE) -> int:
    """One-to-one hits within +-tol, closest pairs first."""
    pairs = sorted((abs(t - f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found) if abs(t - f) <= tol)
    used_t: set[int] = set()
    used_f: set[int] = set()
    hits = 0
    for _, i, j in pairs:
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            hits += 1
    return hits


@dataclass
class Tally:
    """One detector's counts over a model's series: true positives, detections, seconds spent."""

    tp: int = 0
    found: int = 0
    seconds: float = 0.0


def cp_model(args: tuple[str, int, int]) -> dict[str, Any]:
    model, n_series, n_commits = args
    dets = detectors()
    tally = {name: Tally() for name in dets}
    true_total = 0
    for s in range(n_series):
        y, truth = make_series(model, s, n_commits)
        true_total += len(truth)
        for name, fn in dets.items():
            t0 = time.perf_counter()
            detected = sorted(set(fn(y)))
            tally[name].seconds += time.perf_counter() - t0
            tally[name].tp += match(truth, detected)
            tally[name].found += len(detected)
    commits = n_series * n_commits
    out: dict[str, Any] = {"model": model, "series": n_series, "commits": commits, "true": true_total}
    for name, t in tally.items():
        tp, found = t.tp, t.found
        prec = tp / found if found else 1.0
        rec = tp / true_total if true_total else 1.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[name] = {"precision": prec, "recall": rec, "f1": f1, "false_alarms_per_1000": 1000.0 * (found - tp) / commits,
                     "seconds": t.seconds}
    return out


# --- report -------------------------------------------------------------------------------------

def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _rate_table(rows: Sequence[dict[str, Any]], models: Sequence[str], effects: Sequence[float],
                second: str) -> list[str]:
    """Markdown table, one line per (model, n), one column per effect: "perfkit / <second>"."""
    by = {(g["model"], g["n"], g["effect"]): g for g in rows}
    lines = ["| model | n | " + " | ".join(f"{e:.0%}" for e in effects) + " |",
             "|---|---:|" + "---:|" * len(effects)]
    for model in models:
        for n in SIZES:
            cells = [f"{by[(model, n, e)]['perfkit']:.3f} / {by[(model, n, e)][second]:.2f}" for e in effects]
            lines.append(f"| {model} | {n} | " + " | ".join(cells) + " |")
    return lines


def report(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = ["# Gate and change-point quality (benchmarks/gate_quality.py)", "",
             f"Machine: {meta['machine']}. Wall time {meta['seconds']:.0f} s "
             f"(CPU {meta.get('cpu_seconds', float('nan')):.0f} s, load average at the end {meta.get('load_avg', float('nan')):.1f}). "
             f"Trials per gate cell: {meta['trials']}; "
             f"change-point series per model: {meta['series']} x {meta['commits']} commits; at scale: "
             f"{meta.get('scale_trials', '-')} trials (100 / 1000 metrics).", ""]
    if data.get("gate"):
        lines += _gate_report(data["gate"], data["whole_gate"], data.get("no_history", ()))
    if data.get("change_points"):
        lines += _cp_report(data["change_points"])
    if data.get("scale"):
        lines += ["", *gate_scale.report(data["scale"])]
    if data.get("cells"):
        lines += ["", *gate_cells.report(data["cells"])]
    if data.get("needs"):
        lines += ["", "## Samples and history needed (docs/ci.md)", "",
                  f"The smallest step perfkit calls a regression in >= 90% of gates of {gate_scale.NEED_METRICS} "
                  "Gaussian metrics (one slowed per step size), by the metric's sample noise and run-to-run "
                  "offset, samples per commit and stored history; steps tried: "
                  + ", ".join(f"{x:.0%}" for x in gate_scale.NEED_STEPS) + ".", "",
                  *gate_scale.needs_table(data["needs"])]
    return "\n".join(lines) + "\n"


def _gate_report(gate: list[dict[str, Any]], whole: list[dict[str, Any]], nohist: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["## Gate: share of trials called a regression", "",
             "perfkit (default policy) / per-sample Mann-Whitney without history. Effect 0% = false-positive rate.", ""]
    lines += _rate_table(gate, MODELS, EFFECTS, "mann_whitney")
    worst = max(g["perfkit"] for g in gate if g["effect"] == 0.0)
    lines += ["", f"Largest false-positive rate of perfkit over all models and n: **{worst:.3f}** (target <= 0.05).", "",
              "## Whole gate: 50 unchanged metrics, n = 10", "",
              "| model | gates with >= 1 false regression, BH (default) | without correction |", "|---|---:|---:|"]
    lines += [f"| {w['model']} | {w['bh']:.3f} | {w['none']:.3f} |" for w in whole]
    if nohist:
        lines += ["", "## Gate without history: one baseline run, one candidate run", "",
                  "Share called a regression / share called noisy. The two runs differ by the model's "
                  "between-run offset; the store has no other run, so the run-to-run spread is the "
                  "no-history prior (docs/ci.md). Effect 0% = false-positive rate.", ""]
        lines += _rate_table(nohist, NO_HISTORY_MODELS, NO_HISTORY_EFFECTS, "noisy")
        worst_nh = max(g["perfkit"] for g in nohist if g["effect"] == 0.0)
        lines += ["", f"Largest false-positive rate without history: **{worst_nh:.3f}** (target <= 0.05)."]
    return lines


def _cp_report(cps: list[dict[str, Any]]) -> list[str]:
    names = ("perfkit", "otava", "otava_min1pct", "asv")
    lines = ["", "## Change points (+-5 commits)", "",
              "| model | detector | precision | recall | F1 | false alarms / 1000 commits | s |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for row in cps:
        for name in names:
            r = row[name]
            lines.append(f"| {row['model']} | {name} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | "
                         f"{r['false_alarms_per_1000']:.2f} | {r['seconds']:.1f} |")
    totals = {}
    for name in names:
        tp = sum(row[name]["recall"] * row["true"] for row in cps)
        found = sum(row[name]["recall"] * row["true"] / row[name]["precision"] if row[name]["precision"] else 0 for row in cps)
        fa = sum(row[name]["false_alarms_per_1000"] * row["commits"] / 1000 for row in cps)
        true = sum(row["true"] for row in cps)
        commits = sum(row["commits"] for row in cps)
        prec = tp / found if found else 1.0
        rec = tp / true
        totals[name] = (prec, rec, 2 * prec * rec / (prec + rec) if prec + rec else 0.0, 1000 * fa / commits)
    lines += ["", "All models pooled:", "", "| detector | precision | recall | F1 | false alarms / 1000 commits |",
              "|---|---:|---:|---:|---:|"]
    lines += [f"| {n} | {t[0]:.3f} | {t[1]:.3f} | {t[2]:.3f} | {t[3]:.2f} |" for n, t in totals.items()]
    return lines


PARTS = ("gate", "changepoints", "scale", "cells")
BASELINES_HINT = ("run: python3 -m venv .venv-bench && .venv-bench/bin/pip install apache-otava asv, then "
                  ".venv-bench/bin/python -m benchmarks.gate_quality (or --part scale)")


@dataclass(frozen=True)
class Sizes:
    """How much each part runs: trials per gate cell, change-point series per model, gates per
    at-scale scenario (100 and 1000 metrics), gates per needs cell, and the at-scale metric counts."""

    trials: int
    whole_trials: int
    series: int
    scale_100: int
    scale_1000: int
    needs: int
    metrics: tuple[int, ...] = gate_scale.METRICS
    cells: int = 40  # gates per issue-30 cell of 100 metrics (1000 metrics: half; 1 metric: x25)


def sizes(args: argparse.Namespace) -> Sizes:
    if args.smoke:  # the script end to end in seconds; the numbers mean nothing
        return Sizes(trials=args.trials or 2, whole_trials=1, series=args.series or 1,
                     scale_100=args.scale_trials or 1, scale_1000=1, needs=1, metrics=(100,), cells=1)
    trials = args.trials or (30 if args.quick else 400)
    scale_trials = args.scale_trials or (20 if args.quick else 400)
    return Sizes(trials=trials, whole_trials=max(trials // 4, 10), series=args.series or (6 if args.quick else 50),
                 scale_100=scale_trials, scale_1000=max(scale_trials // 10, 2), needs=max(scale_trials // 4, 10),
                 cells=args.cells_gates or (6 if args.quick else 40))


def missing_baselines() -> str | None:
    """Why Apache Otava and asv (the change-point baselines) cannot be imported, or None."""
    try:
        detectors()
    except ImportError as exc:
        return str(exc)
    return None


def run_parts(parts: Sequence[str], size: Sizes, workers: int, only: Sequence[str] = ()) -> dict[str, Any]:
    """Each chosen part's rows, computed in a pool of `workers` processes."""
    data: dict[str, Any] = {}
    with mp.get_context("fork").Pool(workers) as pool:
        if "gate" in parts:
            data["gate"] = pool.map(gate_cell, [(m, n, e, size.trials) for m in MODELS for n in SIZES
                                                for e in EFFECTS], chunksize=1)
            data["no_history"] = pool.map(no_history_cell, [(m, n, e, size.trials) for m in NO_HISTORY_MODELS
                                                            for n in SIZES for e in NO_HISTORY_EFFECTS], chunksize=1)
            data["whole_gate"] = pool.map(whole_gate, [(m, 50, size.whole_trials)
                                                       for m in ("gaussian", "bimodal", "offset")])
        if "changepoints" in parts:
            data["change_points"] = pool.map(cp_model, [(m, size.series, 400) for m in MODELS])
        if "scale" in parts:
            data["scale"] = pool.map(gate_scale.scenario,
                                     gate_scale.jobs(size.scale_100, size.scale_1000, size.metrics), chunksize=1)
            data["needs"] = pool.map(gate_scale.need_cell, gate_scale.need_jobs(size.needs), chunksize=1)
        if "cells" in parts:
            data["cells"] = pool.map(gate_cells.run_cell, gate_cells.jobs(size.cells, max(size.cells // 2, 1),
                                                                          size.cells * 25, only), chunksize=1)
    return data


def update_meta(data: dict[str, Any], parts: Sequence[str], size: Sizes, quick: bool, seconds: float) -> None:
    import resource

    cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    meta = dict(data.get("meta") or {})
    meta.update({"machine": machine(), "load_avg": os.getloadavg()[0], "quick": quick})
    meta.setdefault("seconds", 0.0)
    meta.setdefault("cpu_seconds", 0.0)
    meta.setdefault("parts_seconds", {})
    for part in parts:
        meta["parts_seconds"][part] = seconds
    meta["seconds"] = sum(meta["parts_seconds"].values())
    meta["cpu_seconds"] = cpu if set(parts) == set(PARTS) else meta["cpu_seconds"] + cpu
    if "gate" in parts:
        meta["trials"] = size.trials
    if "changepoints" in parts:
        meta.update(series=size.series, commits=400)
    if "cells" in parts:
        meta["cells_gates"] = f"{size.cells} / {max(size.cells // 2, 1)} / {size.cells * 25} (100 / 1000 / 1 metrics)"
    if "scale" in parts:
        meta["scale_trials"] = f"{size.scale_100} / {size.scale_1000}"
    meta.setdefault("trials", size.trials)
    meta.setdefault("series", size.series)
    meta.setdefault("commits", 400)
    data["meta"] = meta


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few trials: a smoke test of the benchmark")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, seconds: checks the script end to end (change points skipped without "
                         "the baselines); writes no results")
    ap.add_argument("--part", choices=PARTS, action="append", help="run only these parts (default: all)")
    ap.add_argument("--trials", type=int, default=None, help="trials per gate cell (default 400; quick 30)")
    ap.add_argument("--series", type=int, default=None, help="change-point series per model (default 50; quick 6)")
    ap.add_argument("--scale-trials", type=int, default=None,
                    help="gates per at-scale scenario with 100 metrics (default 400; 1000 metrics: a tenth)")
    ap.add_argument("--cells-gates", type=int, default=None,
                    help="gates per issue-30 cell of 100 metrics (default 40; quick 6)")
    ap.add_argument("--cell", action="append", default=[], metavar="NAME",
                    help="part cells: run only this cell (its name in benchmarks/gate_cells.py CELLS; repeatable); "
                         "its rows replace those of the same cells in the results")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    parts = args.part or list(PARTS)
    missing = missing_baselines() if {"gate", "changepoints"} & set(parts) else None
    if missing and not args.smoke:
        print(f"gate_quality: baselines missing ({missing}); {BASELINES_HINT}", file=sys.stderr)
        return 2
    if missing and "changepoints" in parts:  # smoke: the gate needs only scipy
        print(f"gate_quality: change points skipped: baselines missing ({missing})", flush=True)
        parts = [p for p in parts if p != "changepoints"]
    size = sizes(args)
    writes = not (args.quick or args.smoke)
    tag = "".join(ch if ch.isalnum() else "-" for ch in platform.node() or "machine")[:40]
    json_path = args.out / f"gate_quality-{tag}.json"
    data: dict[str, Any] = json.loads(json_path.read_text()) if json_path.exists() and writes else {}
    t0 = time.time()
    try:
        gate_cells.jobs(1, 1, 1, args.cell)
    except ValueError as exc:
        print(f"gate_quality: --cell: {exc}", file=sys.stderr)
        return 2
    fresh = run_parts(parts, size, args.workers, args.cell)
    if args.cell and "cells" in fresh:
        fresh["cells"] = gate_cells.merge(data.get("cells", ()), fresh["cells"])
    data.update(fresh)
    update_meta(data, parts, size, args.quick, time.time() - t0)
    text = report(data)
    print(text)
    if writes:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"gate_quality-{tag}.md").write_text(text)
        json_path.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
