"""The cells of issue 30 (part "cells" of benchmarks/gate_quality.py), peers in the same run.

Each cell draws whole gates (every metric with its own noise factor, log-uniform 0.5-2x; within-run
noise 0.5%, run-to-run offsets 0.3% x factor) and judges each gate twice: all unchanged, and a
changed pull request (`kind`): "regress" = 5% of the metrics 5% slower, "improve" = 5% of the
metrics 5% faster (none slower). Noise models:
- gaussian: Gaussian samples and run offsets (benchmarks/gate_noise.py "gaussian");
- t3: Student-t (3 df) run offsets with 0.6% x factor sd, Gaussian samples;
- bimodal: two clock states 3% x factor apart, a per-run share of slow samples (Beta(2, 4));
- drift: an AR(1) wander of the level (0.6% sd, phi 0.9) plus offsets.
Rules, on the same data: perfkit (compare_runs, default policy), perfkit strict
(fail_on: [regressed, noisy, suspect]), Conbench z > 5 and z > 3 (candidate run mean vs the
history of run means, the baseline included), Welch t and Mann-Whitney (candidate samples vs the
baseline run's, one-sided, Benjamini-Hochberg over the gate's metrics; need n >= 2), asv's
1.1x rule (candidate mean > 1.1 x the baseline run's mean). Reported per cell: share of gates
failed (unchanged and changed pull request), false regressions per 1000 unchanged metrics, recall
at +5% (regress), perfkit's verdicts on unchanged metrics and its headline outcomes.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from benchmarks.gate_noise import BETWEEN, scale_levels, scale_samples
from benchmarks.gate_scale import _history, _side
from perfkit.regression.gate.compare import GateResult, compare_runs
from perfkit.regression.gate.multiple import adjust_p_values
from perfkit.regression.gate.policy import GatePolicy
from perfkit.regression.gate.types import Verdict

RULES = ("perfkit", "perfkit_strict", "z5", "z3", "welch_bh", "mw_bh", "asv_1.1x")
STRICT = GatePolicy(fail_on=("regressed", "noisy", "suspect"))
SHARE, EFFECT = 0.05, 0.05
SEED_BASE = 5000  # held out: not the seeds of gate_scale / gate_improvements


@dataclass(frozen=True)
class Cell:
    name: str
    model: str
    metrics: int
    n: int
    history: int  # earlier commits stored (0: the baseline run alone)
    kind: str  # "regress" | "improve"


CELLS = (
    Cell("improvement-only PRs", "gaussian", 1000, 3, 12, "improve"),
    Cell("gaussian", "gaussian", 100, 3, 12, "regress"),
    Cell("t3 run offsets", "t3", 100, 3, 12, "regress"),
    Cell("bimodal single samples", "bimodal", 100, 1, 12, "regress"),
    Cell("bimodal", "bimodal", 100, 3, 12, "regress"),
    Cell("drift", "drift", 100, 3, 12, "regress"),
    Cell("short history", "gaussian", 100, 3, 3, "regress"),
    Cell("n = 1, no history", "gaussian", 100, 1, 0, "regress"),
    Cell("1,000 metrics", "gaussian", 1000, 3, 12, "regress"),
    Cell("one metric", "gaussian", 1, 3, 12, "regress"),
    Cell("one metric, t3", "t3", 1, 3, 12, "regress"),
)


def draw(cell: Cell, seed: int) -> np.ndarray:
    """(commits + 2 runs, metrics, n) samples: the history, the baseline, the candidate."""
    rng = np.random.default_rng([41, zlib.crc32(cell.name.encode()), seed])
    m = cell.metrics
    factor = np.exp(rng.uniform(math.log(0.5), math.log(2.0), m))
    runs = max(cell.history, 1) + 1
    if cell.model == "t3":
        levels = rng.standard_t(3.0, (runs, m)) / math.sqrt(3.0) * (2.0 * BETWEEN * factor)
        return scale_samples("gaussian", cell.n, levels, factor, rng)
    return scale_samples(cell.model, cell.n, scale_levels(cell.model, runs, factor, rng), factor, rng)


def _bh_calls(p: np.ndarray) -> np.ndarray:
    return np.array(adjust_p_values([float(x) if math.isfinite(x) else 1.0 for x in p], "bh")) <= 0.05


def peers(x: np.ndarray, history: int) -> dict[str, np.ndarray]:
    """Each peer's regression calls (metrics,) on one gate; NaN-free booleans (False when a rule
    cannot run: z without history, Welch / Mann-Whitney with one sample)."""
    from scipy import stats

    m = x.shape[1]
    means = x.mean(axis=2)
    out: dict[str, np.ndarray] = {}
    ref = means[:-1]
    if history >= 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (means[-1] - ref.mean(axis=0)) / ref.std(axis=0, ddof=1)
        out["z5"], out["z3"] = z > 5.0, z > 3.0
    else:
        out["z5"] = out["z3"] = np.zeros(m, dtype=bool)
    if x.shape[2] >= 2:
        with np.errstate(divide="ignore", invalid="ignore"):
            pw = stats.ttest_ind(x[-1], x[-2], axis=1, equal_var=False, alternative="greater").pvalue
        out["welch_bh"] = _bh_calls(np.asarray(pw))
        out["mw_bh"] = _bh_calls(np.asarray(stats.mannwhitneyu(x[-1], x[-2], axis=1, alternative="greater").pvalue))
    else:
        out["welch_bh"] = out["mw_bh"] = np.zeros(m, dtype=bool)
    out["asv_1.1x"] = means[-1] / means[-2] > 1.1
    return out


def judge(x: np.ndarray, history: int) -> tuple[dict[str, np.ndarray], GateResult]:
    m = x.shape[1]
    names = [f"m{i:04d}:time_s" for i in range(m)]
    stored = x[:-1] if history else x[-2:-1]
    hist = _history(stored, names)
    base_id = f"r{stored.shape[0] - 1}"
    result = compare_runs(_side(base_id, names, x[-2]), _side("cand", names, x[-1]), lambda nm: hist[nm],
                          policy=STRICT)
    verdict = np.array([c.verdict.value for c in result.comparisons])
    calls = {"perfkit": verdict == Verdict.REGRESSED.value,
             "perfkit_strict": np.isin(verdict, STRICT.fail_on), **peers(x, history)}
    return calls, result


@dataclass
class Tally:
    gates: int = 0
    fail_null: dict[str, int] | None = None
    fail_changed: dict[str, int] | None = None
    fa: dict[str, int] | None = None  # false regressions on unchanged metrics (both gates)
    hits: dict[str, int] | None = None
    unchanged_metrics: int = 0
    changed_metrics: int = 0


def run_cell(args: tuple[Cell, int]) -> dict[str, Any]:
    cell, gates = args
    fail_null = dict.fromkeys(RULES, 0)
    fail_changed = dict.fromkeys(RULES, 0)
    fa = dict.fromkeys(RULES, 0)
    fa_null = dict.fromkeys(RULES, 0)  # of fa: those in the all-unchanged gates
    hits = dict.fromkeys(RULES, 0)
    verdicts: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    unchanged = changed = 0
    for g in range(gates):
        x = draw(cell, SEED_BASE + g)
        calls, result = judge(x, cell.history)
        for v in result.comparisons:
            verdicts[v.verdict.value] = verdicts.get(v.verdict.value, 0) + 1
        outcome = replace(result, policy=GatePolicy()).outcome  # the default policy's headline
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        for r in RULES:
            fail_null[r] += int(calls[r].any())
            fa[r] += int(calls[r].sum())
            fa_null[r] += int(calls[r].sum())
        unchanged += cell.metrics
        k = max(int(round(cell.metrics * SHARE)), 1) if cell.metrics >= 20 else int(g % 2 == 0)
        moved = np.zeros(cell.metrics, dtype=bool)
        moved[:k] = True
        x[-1, moved] *= (1.0 + EFFECT) if cell.kind == "regress" else (1.0 - EFFECT)
        calls, _ = judge(x, cell.history)
        for r in RULES:
            fail_changed[r] += int(calls[r].any())
            fa[r] += int(calls[r][~moved].sum())
            hits[r] += int(calls[r][moved].sum()) if cell.kind == "regress" else 0
        unchanged += int((~moved).sum())
        changed += int(moved.sum()) if cell.kind == "regress" else 0
    per_metric = sum(verdicts.values())
    return {"cell": cell.name, "model": cell.model, "metrics": cell.metrics, "n": cell.n, "history": cell.history,
            "kind": cell.kind, "gates": gates, "unchanged_metrics": unchanged, "changed_metrics": changed,
            "fail_unchanged": {r: fail_null[r] / gates for r in RULES},
            "fail_changed": {r: fail_changed[r] / gates for r in RULES},
            "false_per_1000": {r: 1000.0 * fa[r] / unchanged for r in RULES},
            "false_count": dict(fa), "false_count_unchanged_gate": dict(fa_null),
            "recall_5pct": {r: hits[r] / changed for r in RULES} if changed else None,
            "perfkit_verdicts_unchanged_gate": {v: k / per_metric for v, k in sorted(verdicts.items())},
            "perfkit_outcomes_unchanged_gate": {o: k / gates for o, k in sorted(outcomes.items())}}


def jobs(gates_100: int, gates_1000: int, gates_1: int, only: Sequence[str] = ()) -> list[tuple[Cell, int]]:
    """(cell, gates) of every cell, or of the cells named in `only` (exact names)."""
    unknown = set(only) - {c.name for c in CELLS}
    if unknown:
        raise ValueError(f"unknown cell(s) {sorted(unknown)}; cells: {[c.name for c in CELLS]}")
    return [(c, gates_1000 if c.metrics >= 1000 else gates_1 if c.metrics == 1 else gates_100) for c in CELLS
            if not only or c.name in only]


def merge(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of `old` with those of `new` replacing the ones of the same cell, in CELLS order."""
    by = {r["cell"]: r for r in old}
    by.update({r["cell"]: r for r in new})
    order = [c.name for c in CELLS]
    return sorted(by.values(), key=lambda r: order.index(r["cell"]) if r["cell"] in order else len(order))


def poisson_interval(k: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson count k."""
    from scipy import stats

    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.chi2.ppf(a / 2, 2 * k)) / 2
    return lo, float(stats.chi2.ppf(1 - a / 2, 2 * k + 2)) / 2


def _se(p: float, k: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.0) / k) if k else 0.0


SHORT = {"perfkit": "perfkit", "perfkit_strict": "strict", "z5": "z>5", "z3": "z>3", "welch_bh": "Welch+BH",
         "mw_bh": "MW+BH", "asv_1.1x": "asv 1.1x"}


def report(rows: Sequence[dict[str, Any]]) -> list[str]:
    head = "| cell | gates | measure | " + " | ".join(SHORT[r] for r in RULES) + " |"
    lines = ["## Issue 30 cells (benchmarks/gate_cells.py)", "", (__doc__ or "").split("\n\n")[1].replace("\n", " "), "",
             head, "|---|---:|---|" + "---:|" * len(RULES)]
    for row in rows:
        g = row["gates"]
        what = "5% of metrics +5%" if row["kind"] == "regress" else "5% of metrics -5%, none slower"
        name = f"{row['cell']} ({row['model']}, {row['metrics']} metrics, n={row['n']}, {row['history']} commits)"
        lines.append(f"| {name} | {g} | gates failed, unchanged | "
                     + " | ".join(f"{row['fail_unchanged'][r]:.2f} +- {_se(row['fail_unchanged'][r], g):.2f}"
                                  for r in RULES) + " |")
        lines.append(f"| | | gates failed, {what} | "
                     + " | ".join(f"{row['fail_changed'][r]:.2f}" for r in RULES) + " |")
        lines.append("| | | false regressions / 1000 unchanged | "
                     + " | ".join(f"{row['false_per_1000'][r]:.2f}" for r in RULES) + " |")
        if "false_count" in row:
            lines.append("| | | false regressions: count (in unchanged / changed gates) | " + " | ".join(
                f"{row['false_count'][r]} ({row['false_count_unchanged_gate'][r]} / "
                f"{row['false_count'][r] - row['false_count_unchanged_gate'][r]})" for r in RULES) + " |")
        if row["recall_5pct"]:
            c = row["changed_metrics"]
            lines.append("| | | recall at +5% | " + " | ".join(
                f"{row['recall_5pct'][r]:.2f} +- {_se(row['recall_5pct'][r], c):.2f}" for r in RULES) + " |")
    lines += _poisson_lines(rows)
    lines += ["", "perfkit's verdicts on the metrics of the unchanged gates, and its headline outcomes:", "",
              "| cell | verdicts | outcomes |", "|---|---|---|"]
    for row in rows:
        v = ", ".join(f"{k} {x:.3f}" for k, x in row["perfkit_verdicts_unchanged_gate"].items())
        o = ", ".join(f"{k} {x:.2f}" for k, x in row["perfkit_outcomes_unchanged_gate"].items())
        lines.append(f"| {row['cell']} | {v} | {o} |")
    return lines


def _poisson_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """perfkit's and z > 5's false regressions per 1000 unchanged metrics with exact 95% intervals."""
    counted = [r for r in rows if "false_count" in r]
    if not counted:
        return []
    lines = ["", "False regressions per 1000 unchanged metrics, exact Poisson 95% intervals (counts over "
             "the unchanged metrics of both gates of each draw):", "",
             "| cell | gates | unchanged metrics | perfkit | z>5 |", "|---|---:|---:|---|---|"]
    for row in counted:
        u = row["unchanged_metrics"]
        cells = []
        for r in ("perfkit", "z5"):
            k = row["false_count"][r]
            lo, hi = poisson_interval(k)
            cells.append(f"{1000.0 * k / u:.2f} [{1000.0 * lo / u:.2f}, {1000.0 * hi / u:.2f}] ({k})")
        lines.append(f"| {row['cell']} | {row['gates']} | {u} | " + " | ".join(cells) + " |")
    return lines
