"""How often `perfkit gate` fails an unchanged serving rerun, and how often it catches a slower one.

    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.serving_gate           # ~15 min
    ... --quick     # synthetic server only, 2 cells: ~2 min
    ... --smoke     # 1 cell, 16 requests, fewer runs; writes nothing

Per cell (server x concurrency x requests) it benches, with `perfkit serve-bench` (12 output
tokens, an SLO and a price, so every run-level metric has window samples):
- 7 runs of one start of the base server (neighbours: "same server" unchanged pairs),
- F runs of a second start of it (with the first runs: "fresh start" unchanged pairs),
- S runs of servers with a true +5%, +10%, +20% per-token slowdown (synthetic: ITL 10 ms ->
  10.5 / 11 / 12 ms, 1 ms gaussian jitter a gap; tiny model: --extra-step-ms 40 -> 42 / 44 / 48,
  so its real step is a little slower still).
Each pair (earlier run as baseline) is gated with the default policy, with no history and with
a 5-run stored history (other runs of the first start), and beside that in the same run: the
same gate on the single values (n = 1 a metric: what run-level numbers were before their window
samples) and a plain one-sided Welch t-test (p < 0.05) on per-request TPOT.
Unchanged pairs: the share the gate fails (any regressed metric) and which metrics it called
regressed. Slowed pairs: the share regressed on TPOT p50, output tok/s and USD / 1M output tok.
Writes benchmarks/results/serving_gate-<machine>.md and .json (not with --smoke).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scipy import stats as sps  # noqa: E402

from benchmarks.gate_quality import machine  # noqa: E402
from benchmarks.serving_gate_runs import Server, bench_many, stage_samples  # noqa: E402
from perfkit.regression.gate.compare import GateResult, RunSide, compare_runs, history_summary  # noqa: E402
from perfkit.regression.gate.policy import GatePolicy  # noqa: E402
from perfkit.regression.gate.types import RunSummary, Verdict  # noqa: E402
from perfkit.store.metrics import MetricRecord  # noqa: E402

SLOWDOWNS = (1.05, 1.10, 1.20)
CAUGHT_ON = ("tpot_p50_s", "output_tok_per_s", "usd_per_1m_output_tok")
HISTORY_RUNS = 5
BASE_RUNS = HISTORY_RUNS + 2  # a same-server pair and 5 other runs of that start as its history
WINDOWED = ("output_tok_per_s", "goodput_tok_per_s", "goodput_req_per_s", "usd_per_1m_output_tok",
            "usd_per_1m_output_tok_at_slo", "slo_attainment", "ttft_p99_s", "token_itl_p99_s")
METHODS = ("gate", "gate+hist", "single", "single+hist", "welch")


@dataclass(frozen=True)
class Cell:
    kind: str
    concurrency: int
    requests: int


@dataclass
class Tally:
    pairs: int = 0
    failed: Counter[str] = field(default_factory=Counter)  # method -> pairs failed / caught
    caught: dict[str, Counter[str]] = field(default_factory=dict)  # method -> metric -> pairs regressed
    metrics: dict[str, Counter[str]] = field(default_factory=dict)  # method -> metric -> unchanged pairs regressed
    client_bound: int = 0  # candidate runs of these pairs flagged client-bound
    refused: int = 0  # pairs with a client-bound side: the gate calls them incomparable


def client_bound(runs: Sequence[RunSide]) -> int:
    return sum(any(m.get("client_bound") for m in r.point_metrics.values()) for r in runs)


def suffix(name: str) -> str:
    return name.rsplit(":", 1)[-1]


def single(side: RunSide) -> RunSide:
    """The side with every run-level metric that has window samples reduced to its value (n = 1);
    per-request metrics (TPOT p50, ...) keep their samples, as before window samples."""
    return replace(side, metrics=tuple(
        MetricRecord(m.name, m.point_key, m.unit, m.direction, (statistics.median(m.samples),))
        if suffix(m.name) in WINDOWED else m for m in side.metrics))


def history_of(sides: Sequence[RunSide]) -> Callable[[str], Sequence[RunSummary]]:
    by_name: dict[str, list[RunSummary]] = {}
    for s in sides:
        for m in s.metrics:
            summ = history_summary(m.samples, statistics.median(m.samples), s.run_id)
            if summ is not None:
                by_name.setdefault(m.name, []).append(summ)
    return lambda name: by_name.get(name, [])


def regressed(result: GateResult) -> set[str]:
    return {suffix(c.metric) for c in result.comparisons if c.verdict == Verdict.REGRESSED}


def welch(base: RunSide, cand: RunSide) -> set[str]:
    b, c = stage_samples(base, "tpot_p50_s"), stage_samples(cand, "tpot_p50_s")
    if len(b) < 2 or len(c) < 2:
        return set()
    p = sps.ttest_ind(c, b, equal_var=False, alternative="greater").pvalue
    return {"tpot_p50_s"} if p < 0.05 else set()


def judge(base: RunSide, cand: RunSide, history: Sequence[RunSide], seed: int) -> dict[str, set[str]]:
    """Metric suffixes each method calls regressed."""
    none: Callable[[str], Sequence[RunSummary]] = lambda _: []  # noqa: E731
    hist, hist1 = history_of(history), history_of([single(h) for h in history])
    pol = GatePolicy()
    return {"gate": regressed(compare_runs(base, cand, none, pol, seed)),
            "gate+hist": regressed(compare_runs(base, cand, hist, pol, seed)),
            "single": regressed(compare_runs(single(base), single(cand), none, pol, seed)),
            "single+hist": regressed(compare_runs(single(base), single(cand), hist1, pol, seed)),
            "welch": welch(base, cand)}


def add(tally: Tally, pair: tuple[RunSide, RunSide], history: Sequence[RunSide], unchanged: bool, seed: int) -> None:
    tally.pairs += 1
    tally.refused += client_bound(pair) > 0
    verdicts = judge(pair[0], pair[1], history, seed)
    for method, bad in verdicts.items():
        if unchanged:
            tally.failed[method] += bool(bad)
            tally.metrics.setdefault(method, Counter()).update(bad)
        else:
            tally.caught.setdefault(method, Counter()).update(m for m in CAUGHT_ON if m in bad)


def run_cell(cell: Cell, fresh: int, slow: int, tmp: Path) -> dict[str, Tally]:
    db = str(tmp / "store.db")
    out = tmp / f"{cell.kind}-{cell.concurrency}-{cell.requests}"
    bench: Callable[[float, int], list[RunSide]] = lambda s, k: bench_many(  # noqa: E731
        Server(cell.kind, s), k, out, db, cell.concurrency, cell.requests)
    base, again = bench(1.0, BASE_RUNS), bench(1.0, fresh)
    tallies = {"same server": Tally(client_bound=client_bound(base)), "fresh start": Tally(client_bound=client_bound(again))}
    for i in range(BASE_RUNS - 1):
        others = [b for j, b in enumerate(base) if j not in (i, i + 1)][:HISTORY_RUNS]
        add(tallies["same server"], (base[i], base[i + 1]), others, True, i)
    for j, cand in enumerate(again):
        for i in range(min(3, BASE_RUNS)):
            add(tallies["fresh start"], (base[i], cand), _without(base, i), True, 10 * j + i)
    for s in SLOWDOWNS:
        key = f"+{round((s - 1) * 100)}%"
        slowed = bench(s, slow)
        tallies[key] = Tally(client_bound=client_bound(slowed))
        for j, cand in enumerate(slowed):
            for i in range(min(3, BASE_RUNS)):
                add(tallies[key], (base[i], cand), _without(base, i), False, 10 * j + i)
    return tallies


def _without(runs: Sequence[RunSide], i: int) -> list[RunSide]:
    return [r for j, r in enumerate(runs) if j != i][:HISTORY_RUNS]


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "-"


def table(cell: Cell, tallies: dict[str, Tally]) -> list[str]:
    lines = [f"### {cell.kind}, concurrency {cell.concurrency}, {cell.requests} requests", "",
             "| pairs | n | client-bound runs / pairs refused | " + " | ".join(METHODS) + " |", "|---|---:|---:|" + "---|" * len(METHODS)]
    for name, t in tallies.items():
        if name in ("same server", "fresh start"):
            cells = [_share(t.failed[m], t.pairs) for m in METHODS]
            lines.append(f"| {name}: failed | {t.pairs} | {t.client_bound} / {t.refused} | " + " | ".join(cells) + " |")
            continue
        for metric in CAUGHT_ON:
            cells = [_share(t.caught.get(m, Counter())[metric], t.pairs) for m in METHODS]
            lines.append(f"| {name}: {metric} regressed | {t.pairs} | {t.client_bound} / {t.refused} | " + " | ".join(cells) + " |")
    wrong = Counter[str]()
    for name in ("same server", "fresh start"):
        wrong.update(tallies[name].metrics.get("gate", Counter()))
        wrong.update({f"{k} (history)": v for k, v in tallies[name].metrics.get("gate+hist", Counter()).items()})
    lines += ["", "Unchanged pairs the gate called regressed, by metric: "
              + (", ".join(f"{k} {v}" for k, v in wrong.most_common()) or "none"), ""]
    return lines


def cells_for(mode: str) -> tuple[list[Cell], int, int]:
    """(cells, fresh-start runs, runs per slowdown)."""
    if mode == "smoke":
        return [Cell("synthetic", 4, 16)], 1, 1
    if mode == "quick":
        return [Cell("synthetic", 1, 16), Cell("synthetic", 4, 64)], 2, 2
    syn = [Cell("synthetic", c, n) for c in (1, 4) for n in (16, 64)]
    return [*syn, Cell("tiny", 1, 16), Cell("tiny", 4, 16), Cell("tiny", 4, 64)], 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="synthetic server, 2 cells (~2 min)")
    ap.add_argument("--smoke", action="store_true", help="1 cell, 1 run a slowdown; writes nothing")
    ap.add_argument("--cell", action="append", default=[], metavar="KIND:C:N",
                    help="only these cells (e.g. tiny:2:12), repeatable")
    ap.add_argument("--load", type=int, default=0, metavar="K",
                    help="K busy-loop processes beside the benchmark: a loaded machine on purpose")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    cells, fresh, slow = cells_for(mode)
    if args.cell:
        cells = [Cell(k, int(c), int(n)) for k, c, n in (x.split(":") for x in args.cell)]
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    lines = ["# Serving gate: unchanged reruns and true slowdowns (benchmarks/serving_gate.py)", ""]
    doc: dict[str, Any] = {"mode": mode, "machine": machine(), "cells": []}
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        _run_cells(cells, fresh, slow, lines, doc)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    head = (f"Machine: {machine()}; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
            f"{args.load} busy-loop processes beside it; mode {mode}, {time.monotonic() - t0:.0f} s. Methods: gate = "
            f"default policy, no history; +hist = with {HISTORY_RUNS} stored runs of the base server; single = every "
            "run-level metric at n = 1 (before window samples); welch = one-sided Welch t-test on per-request TPOT, "
            "p < 0.05. Shares are over the pairs of each row (n).")
    lines[2:2] = [head, ""]
    text = "\n".join(lines) + "\n"
    print(text)
    doc["load_average"] = [load0, os.getloadavg()[0]]
    doc["busy_loops"] = args.load
    if mode != "smoke":
        args.out.mkdir(parents=True, exist_ok=True)
        tag = "".join(ch if ch.isalnum() else "-" for ch in platform.node() or "machine")[:40]
        (args.out / f"serving_gate-{tag}.md").write_text(text)
        (args.out / f"serving_gate-{tag}.json").write_text(json.dumps(doc, indent=1))
    return 0


def _run_cells(cells: Sequence[Cell], fresh: int, slow: int, lines: list[str], doc: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for cell in cells:
            tallies = run_cell(cell, fresh, slow, Path(tmp))
            lines += table(cell, tallies)
            doc["cells"].append({"cell": cell.__dict__, "tallies": {
                k: {"pairs": t.pairs, "failed": dict(t.failed), "caught": {m: dict(c) for m, c in t.caught.items()},
                    "regressed_metrics": {m: dict(c) for m, c in t.metrics.items()},
                    "client_bound_runs": t.client_bound, "refused_pairs": t.refused} for k, t in tallies.items()}})


if __name__ == "__main__":
    raise SystemExit(main())
