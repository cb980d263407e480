"""The gate at scale (part 3 of benchmarks/gate_quality.py): many metrics, few samples.

For each noise model of gate_noise.SCALE_MODELS, 100 or 1000 metrics, n = 1, 3, 5 or 10 samples
per commit, and with history (12 earlier commits, one run each, the last is the baseline) or
without (the baseline run alone): 1% of the metrics slow down by 2%, 1% by 5%, 1% by 10% in the
candidate, the other 97% are unchanged. Each metric's noise is scaled by its own factor
(log-uniform 0.5-2x: the points of a sweep differ in noise).

Three rules judge the same data:
- perfkit: perfkit.regression.gate.compare.compare_runs with the default policy (the whole
  gate: one test per metric against its history, moderated variances, Benjamini-Hochberg);
- Conbench-style z-score: the candidate run's mean against the history of per-run means,
  regression when z = (mean - mean(history)) / sd(history) > 5 (needs history);
- fixed threshold: regression when the candidate run's mean is > 5% above the baseline run's.

Reported per scenario: recall (share of slowed metrics called a regression) at +2/+5/+10% and
false alarms (regressions called on unchanged metrics) per 1000 unchanged metrics.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.gate_noise import SCALE_MODELS, scale_levels, scale_samples
from perfkit.core.direction import LOWER
from perfkit.core.env import Env
from perfkit.regression.gate.compare import RunSide, compare_runs
from perfkit.regression.gate.robust import summarize_rows
from perfkit.regression.gate.types import RunSummary, Verdict
from perfkit.store.metrics import MetricRecord

EFFECTS = (0.02, 0.05, 0.10)
SIZES = (1, 3, 5, 10)
METRICS = (100, 1000)
HISTORY_COMMITS = 12
CONBENCH_Z = 5.0
FIXED = 0.05
RULES = ("perfkit", "conbench", "fixed")


def _side(run_id: str, names: Sequence[str], x: np.ndarray) -> RunSide:
    metrics = tuple(MetricRecord(nm, None, "s", LOWER, tuple(map(float, x[i]))) for i, nm in enumerate(names))
    return RunSide(run_id=run_id, label=run_id, gpu="sim", env=Env(), metrics=metrics)


def _history(hist: np.ndarray, names: Sequence[str]) -> dict[str, list[RunSummary]]:
    """Per metric the summaries of the stored runs (run ids r0 .. r{k-1}), as the store gives."""
    runs = hist.shape[0]
    loc = np.empty((runs, hist.shape[1]))
    se = np.empty_like(loc)
    for r in range(runs):
        loc[r], se[r] = summarize_rows(np.log(hist[r]))
    n = hist.shape[2]
    return {nm: [RunSummary(float(loc[r, i]), float(se[r, i]), n, f"r{r}") for r in range(runs)]
            for i, nm in enumerate(names)}


def effects(m: int) -> np.ndarray:
    k = max(m // 100, 1)
    out = np.zeros(m)
    for j, e in enumerate(EFFECTS):
        out[j * k : (j + 1) * k] = e
    return out


def judge(x: np.ndarray, history: bool) -> dict[str, Any]:
    """Each rule's regression calls on one gate (x: runs x metrics x samples; the last run is
    the candidate, the one before it the baseline), perfkit's verdicts and seconds."""
    m = x.shape[1]
    names = [f"m{i:04d}:time_s" for i in range(m)]
    stored = x[:-1] if history else x[-2:-1]
    hist = _history(stored, names)
    base_id = f"r{stored.shape[0] - 1}"
    t0 = time.perf_counter()
    result = compare_runs(_side(base_id, names, x[-2]), _side("cand", names, x[-1]), lambda nm: hist[nm])
    seconds = time.perf_counter() - t0
    verdict = np.array([c.verdict.value for c in result.comparisons])
    calls = {"perfkit": verdict == Verdict.REGRESSED.value}
    means = x.mean(axis=2)
    if history:
        ref = means[:-1]
        z = (means[-1] - ref.mean(axis=0)) / ref.std(axis=0, ddof=1)
        calls["conbench"] = z > CONBENCH_Z
    calls["fixed"] = means[-1] / means[-2] - 1.0 > FIXED
    return {"calls": calls, "seconds": seconds, "verdict": verdict}


def trial(model: str, m: int, n: int, history: bool, seed: int) -> dict[str, Any]:
    """One gate with 3% of the metrics slowed down, and the same gate with nothing changed."""
    rng = np.random.default_rng([31, zlib.crc32(model.encode()), m, n, int(history), seed])
    factor = np.exp(rng.uniform(math.log(0.5), math.log(2.0), m))
    levels = scale_levels(model, HISTORY_COMMITS + 1, factor, rng)
    x = scale_samples(model, n, levels, factor, rng)
    null = judge(x, history)
    eff = effects(m)
    x[-1] *= (1.0 + eff)[:, None]
    out = judge(x, history)
    return {**out, "effects": eff, "null_calls": null["calls"]}


def scenario(args: tuple[str, int, int, bool, int]) -> dict[str, Any]:
    """Recall per effect and false alarms per 1000 unchanged metrics of each rule over trials."""
    model, m, n, history, trials = args
    hits = {r: np.zeros(len(EFFECTS)) for r in RULES}
    fa = dict.fromkeys(RULES, 0)
    fa_null = dict.fromkeys(RULES, 0)
    changed = np.zeros(len(EFFECTS))
    null = null_gate = 0
    verdicts: dict[str, int] = {}
    seconds = []
    for t in range(trials):
        out = trial(model, m, n, history, t)
        eff = out["effects"]
        zero = eff == 0
        null += int(zero.sum())
        null_gate += m
        for j, e in enumerate(EFFECTS):
            changed[j] += int((eff == e).sum())
        for rule, call in out["calls"].items():
            fa[rule] += int(call[zero].sum())
            fa_null[rule] += int(out["null_calls"][rule].sum())
            for j, e in enumerate(EFFECTS):
                hits[rule][j] += int(call[eff == e].sum())
        for v in out["verdict"][zero]:
            verdicts[str(v)] = verdicts.get(str(v), 0) + 1
        seconds.append(out["seconds"])
    row: dict[str, Any] = {"model": model, "metrics": m, "n": n, "history": history, "trials": trials,
                           "perfkit_seconds": float(np.median(seconds)),
                           "changed_per_effect": int(changed[0]),
                           "perfkit_unchanged_verdicts": {v: k / null for v, k in sorted(verdicts.items())}}
    for rule in RULES:
        if rule == "conbench" and not history:
            row[rule] = None
            continue
        row[rule] = {"recall": [float(h / c) for h, c in zip(hits[rule], changed, strict=True)],
                     "false_alarms_per_1000": 1000.0 * fa[rule] / null,
                     "false_alarms_per_1000_nothing_changed": 1000.0 * fa_null[rule] / null_gate}
    row["meets_target"] = meets_target(row) if history else None
    return row


def meets_target(row: dict[str, Any], sds: float = 2.0) -> bool:
    """No other rule with no more false alarms than perfkit has a higher recall at any effect
    (by more than `sds` standard errors of the difference of two such shares: measurement noise)."""
    pk = row["perfkit"]
    n = row["changed_per_effect"]
    for rule in RULES[1:]:
        r = row.get(rule)
        if r is None or r["false_alarms_per_1000"] > pk["false_alarms_per_1000"]:
            continue
        for o, p in zip(r["recall"], pk["recall"], strict=True):
            se = math.sqrt((o * (1 - o) + p * (1 - p)) / n) if n else 0.0
            if o > p + sds * se + 1e-12:
                return False
    return True


def jobs(trials_100: int, trials_1000: int, metrics: Sequence[int] = METRICS) -> list[tuple[str, int, int, bool, int]]:
    return [(model, m, n, h, trials_100 if m == 100 else trials_1000)
            for model in SCALE_MODELS for m in metrics for n in SIZES for h in (True, False)]


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "- | - | -"
    rec = " / ".join(f"{x:.2f}" for x in r["recall"])
    return f"{rec} | {r['false_alarms_per_1000']:.2f} | {r['false_alarms_per_1000_nothing_changed']:.2f}"


INTRO = ("1% of the metrics slow down by 2%, 1% by 5%, 1% by 10%; the rest are unchanged. Within-run noise "
         "0.5% and run-to-run offsets 0.3% (offset: 1%; drift: an AR(1) wander of 0.6% sd on top; t3: Student "
         "t samples; bimodal: two clock states 3% apart, a per-run share of slow samples), each metric's noise "
         "scaled by its own factor (0.5-2x). History: 12 earlier commits, one run each, the last is the "
         "baseline. Recall at +2 / +5 / +10%; FA: false alarms (regressions called on unchanged metrics) per "
         "1000 unchanged metrics in these gates, and FA0 in the same gates with nothing changed (the common "
         "CI case). Conbench-style: candidate mean vs the history of run means, z > 5; fixed: > 5% above "
         "the baseline run. Target met: no rule with no more false alarms (FA) than perfkit has a higher "
         "recall at any step (by more than 2 standard errors).")


def report(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["## The gate at scale: many metrics, few samples (benchmarks/gate_scale.py)", "", INTRO, "",
             "### With history", "",
             "| model | metrics | n | perfkit recall | FA | FA0 | Conbench z>5 recall | FA | FA0 | fixed 5% recall "
             "| FA | FA0 | target met | perfkit s |",
             "|---|---:|---:|---|---:|---:|---|---:|---:|---|---:|---:|:---:|---:|"]
    for r in rows:
        if r["history"]:
            lines.append(f"| {r['model']} | {r['metrics']} | {r['n']} | {_cell(r['perfkit'])} | "
                         f"{_cell(r['conbench'])} | {_cell(r['fixed'])} | {'yes' if r['meets_target'] else 'NO'} "
                         f"| {r['perfkit_seconds']:.2f} |")
    met = [r["meets_target"] for r in rows if r["history"]]
    lines += ["", f"Target met in **{sum(met)} of {len(met)}** scenarios with history.", "",
              "### Without history (the baseline run alone)", "",
              "| model | metrics | n | perfkit recall | FA | FA0 | unchanged metrics: inconclusive / unchanged / "
              "noisy | fixed 5% recall | FA | FA0 |",
              "|---|---:|---:|---|---:|---:|---|---|---:|---:|"]
    for r in rows:
        if not r["history"]:
            v = r["perfkit_unchanged_verdicts"]
            shares = " / ".join(f"{v.get(k, 0.0):.2f}" for k in ("inconclusive", "unchanged", "noisy"))
            lines.append(f"| {r['model']} | {r['metrics']} | {r['n']} | {_cell(r['perfkit'])} | {shares} | "
                         f"{_cell(r['fixed'])} |")
    return lines


NEED_NOISE = ((0.005, 0.0025), (0.01, 0.005), (0.02, 0.01))  # (sample noise, run-to-run offset)
NEED_SIZES = (1, 3, 10)
NEED_HISTORY = (0, 5, 12, 30)  # earlier commits stored (0: the baseline alone)
NEED_STEPS = (0.01, 0.02, 0.03, 0.05, 0.10, 0.20)
NEED_METRICS = 100
NEED_RECALL = 0.9


def need_cell(args: tuple[float, float, int, int, int]) -> dict[str, Any]:
    """Recall per step of a gate of NEED_METRICS Gaussian metrics (one slowed per step)."""
    within, between, n, history, trials = args
    hits = np.zeros(len(NEED_STEPS))
    names = [f"m{i:04d}:time_s" for i in range(NEED_METRICS)]
    for t in range(trials):
        rng = np.random.default_rng([37, int(within * 1e4), n, history, t])
        runs = max(history, 1) + 1
        levels = rng.normal(0.0, between, (runs, NEED_METRICS))
        x = 1e-3 * np.exp(levels)[:, :, None] * (1.0 + within * rng.standard_normal((runs, NEED_METRICS, n)))
        x[-1, : len(NEED_STEPS)] *= (1.0 + np.array(NEED_STEPS))[:, None]
        hist = _history(x[:-1], names)
        result = compare_runs(_side(f"r{runs - 2}", names, x[-2]), _side("cand", names, x[-1]), hist.__getitem__)
        hits += [c.verdict == Verdict.REGRESSED for c in result.comparisons[: len(NEED_STEPS)]]
    return {"within": within, "between": between, "n": n, "history": history, "trials": trials,
            "recall": [float(h / trials) for h in hits]}


def need_jobs(trials: int) -> list[tuple[float, float, int, int, int]]:
    return [(w, b, n, h, trials) for w, b in NEED_NOISE for n in NEED_SIZES for h in NEED_HISTORY]


def needs_table(cells: Sequence[dict[str, Any]]) -> list[str]:
    """Smallest step perfkit finds in >= 90% of gates, by noise, samples per commit and history."""
    by = {(c["within"], c["n"], c["history"]): c for c in cells}
    head = " | ".join("baseline only" if h == 0 else f"{h} commits" for h in NEED_HISTORY)
    lines = [f"| sample noise / run-to-run offset | samples per commit | {head} |",
             "|---|---:|" + "---:|" * len(NEED_HISTORY)]
    for w, b in NEED_NOISE:
        for n in NEED_SIZES:
            cells_txt = []
            for h in NEED_HISTORY:
                rec = by[(w, n, h)]["recall"]
                found = [s for s, r in zip(NEED_STEPS, rec, strict=True) if r >= NEED_RECALL]
                cells_txt.append(f"{found[0]:.0%}" if found else f"> {NEED_STEPS[-1]:.0%}")
            lines.append(f"| {w:.1%} / {b:.2%} | {n} | " + " | ".join(cells_txt) + " |")
    return lines
