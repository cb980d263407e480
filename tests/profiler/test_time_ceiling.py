"""A budget is a budget: a point stops at CEILING_FACTOR x budget_s even before min_reps, says
so in its record (stop_reason) and in the profile table (a footnote)."""

from __future__ import annotations

import time

from rich.console import Console

from perfkit.core.env import Env
from perfkit.core.measurement import (
    CEILING_FACTOR,
    STOP_BUDGET,
    STOP_TIME_CEILING,
    TIME_CEILING_NOTE,
    Measurement,
)
from perfkit.core.record import PointResult, Run
from perfkit.core.timing import TimingConfig
from perfkit.profiler.timer import stop_reason, time_callable
from perfkit.reports.console import summary_table


def test_ceiling_rule_applies_only_past_ten_budgets() -> None:
    cfg = TimingConfig(min_reps=10, budget_s=0.1)
    three = [1.0, 1.1, 0.9]
    assert stop_reason(three, 0.5, cfg) is None  # past the budget, short of min_reps: go on
    assert stop_reason(three, CEILING_FACTOR * 0.1, cfg) == STOP_TIME_CEILING
    assert stop_reason([], 5.0, cfg) is None  # never stop with no sample at all
    ten = [1.0, 1.2, 0.8, 1.5, 0.7] * 2
    assert stop_reason(ten, 5.0, cfg) == STOP_BUDGET  # min_reps taken: the usual rules


def test_slow_callable_stops_at_the_ceiling_before_min_reps() -> None:
    call_s, budget_s = 0.02, 0.005  # ceiling 0.05 s: about 3 samples of the 50 asked for

    def slow() -> None:
        time.sleep(call_s)

    cfg = TimingConfig(warmup_s=0.0, budget_s=budget_s, min_reps=50, target_rel_ci=1e-6)
    t0 = time.perf_counter()
    m = time_callable(slow, "cpu", cfg)
    wall_s = time.perf_counter() - t0
    assert m.stop_reason == STOP_TIME_CEILING
    assert 1 <= len(m.samples_s) < cfg.min_reps
    assert sum(m.samples_s) < CEILING_FACTOR * budget_s + 2 * max(m.samples_s)
    assert wall_s < 0.5  # 50 samples would take >= 1 s
    assert m.stop_note == TIME_CEILING_NOTE


def _point(i: int, reason: str) -> PointResult:
    m = Measurement(samples_s=(1.0, 1.1, 0.9), warmup_reps=1, stop_reason=reason, timer="perf_counter",
                    target_rel_ci=0.01)
    return PointResult(key=f"gemm/m={i}", kind="gemm", workload="gemm", status="ok", params={"m": i},
                       measurement=m)


def test_profile_table_footnotes_the_ceiling_once() -> None:
    points = (_point(1, STOP_TIME_CEILING), _point(2, STOP_TIME_CEILING), _point(3, STOP_BUDGET))
    run = Run(run_id="20260101-000000-abcdef", created="2026-01-01T00:00:00+00:00", status="complete",
              spec={}, spec_hash="h", spec_path="s.yaml", device="cpu", env=Env(), points=points)
    console = Console(width=200, record=True, soft_wrap=True)
    console.print(summary_table(run))
    text = console.export_text()
    assert text.count("ok [1]") == 2
    assert text.count("time ceiling") == 1 and "[1] stopped at the time ceiling" in text
