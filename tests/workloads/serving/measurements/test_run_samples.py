"""Samples of a stage's run-level numbers (workloads/serving/measurements/run_samples.py): the median of each
metric's samples is its stored value exactly, the gate reads them (metric_values), windows are
never shorter than a request, and a stage too short for 3 windows keeps its single value."""

from __future__ import annotations

import math
import statistics

import pytest

from perfkit.core.env import Env
from perfkit.core.metric_defs import metric_values
from perfkit.regression.gate.compare import RunSide, compare_runs
from perfkit.regression.gate.types import RunSummary, Verdict
from perfkit.store.metrics import MetricRecord
from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.goodput import Slo
from perfkit.workloads.serving.measurements.run_samples import (
    MIN_SAMPLES,
    batches,
    scaled,
    token_flows,
    window_count,
    window_rates,
)
from perfkit.workloads.serving.measurements.summary import summarize
from perfkit.workloads.serving.records import RequestRecord
from tests.helpers.serving_records import rec

PRICE = Price(2.99, 1, "test")
SLO = Slo(ttft_s=0.5, tpot_s=0.05)


def sequential(n: int, ttft_s: float, itl_s: float, tokens: int, gap_s: float = 0.001,
               jitter: float = 0.0) -> tuple[list[RequestRecord], float]:
    """A closed loop of one: request i sent when i - 1 ended; ITL of request i is itl_s x
    (1 + jitter x (-1)^i). Returns the records and the stage's duration."""
    out, t = [], 0.0
    for i in range(n):
        d = itl_s * (1.0 + jitter * (-1) ** i)
        times = tuple(t + ttft_s + j * d for j in range(tokens))
        out.append(rec(i, t, t, times))
        t = times[-1] + gap_s
    return out, t


def test_window_rates_split_flows_by_overlap_and_average_to_the_stage_rate() -> None:
    flows = [(0.1, 0.1, 1.0), (0.5, 1.5, 2.0), (2.9, 3.0, 1.0), (3.0, 3.0, 1.0)]  # the last at the very end
    rates = window_rates(flows, 3.0, 3)
    assert rates == pytest.approx([2.0, 1.0, 2.0])
    assert statistics.mean(rates) == pytest.approx(5.0 / 3.0)
    assert window_rates(flows, 3.0, 2) == []  # fewer than 3 windows: no samples


def test_a_chunk_is_produced_over_the_time_since_the_previous_one() -> None:
    r = rec(0, 0.0, 1.0, (1.5, 2.0, 2.0, 3.0))  # the first token since the send, then a chunk of 2
    assert token_flows([r]) == [(1.0, 1.5, 1.0), (1.5, 2.0, 2.0), (2.0, 3.0, 1.0)]
    assert sum(a for _, _, a in token_flows([r], per_request=True)) == pytest.approx(1.0)


def test_scaled_samples_give_the_value_back_and_refuse_zeros() -> None:
    out = scaled([1.0, 2.0, 4.0, 8.0], 30.0)
    assert out is not None and statistics.median(out) == pytest.approx(30.0, rel=1e-12)
    assert out[1] / out[0] == pytest.approx(2.0)  # the relative spread is kept
    assert scaled([1.0, 0.0, 2.0], 5.0) is None
    assert scaled([1.0, 2.0], 5.0) is None


def test_windows_are_never_shorter_than_a_request() -> None:
    assert window_count(10.0, 1.0) == 8
    assert window_count(4.0, 1.0) == 4
    assert window_count(2.5, 1.0) == 2  # the gate gets no samples then (< MIN_SAMPLES)
    assert window_count(2.5, None) == 0


def test_batches_cover_every_record_once() -> None:
    records, _ = sequential(11, 0.01, 0.001, 3)
    parts = batches(records, 4)
    assert [len(b) for b in parts] == [2, 3, 3, 3]
    assert [r.index for b in parts for r in b] == list(range(11))


def test_every_run_level_number_gets_samples_whose_median_is_its_value() -> None:
    records, duration = sequential(16, 0.04, 0.01, 20, jitter=0.05)
    m = summarize(records, duration, SLO, PRICE)
    samples = m["window_samples"]
    assert isinstance(samples, dict)
    expected = {"output_tok_per_s", "goodput_tok_per_s", "goodput_req_per_s", "usd_per_1m_output_tok",
                "usd_per_1m_output_tok_at_slo", "slo_attainment", "ttft_p99_s", "token_itl_p99_s"}
    assert set(samples) == expected
    for key, values in samples.items():
        assert len(values) >= MIN_SAMPLES, key
        assert statistics.median(values) == pytest.approx(m[key], rel=1e-9), key
    tested = {d.key: nums for d, nums in metric_values(m)}
    for key in (*expected, "ttft_sched_p50_s"):
        assert len(tested[key]) >= MIN_SAMPLES, key  # the gate tests the samples, not one value


def test_a_stage_of_two_requests_keeps_single_values() -> None:
    records, duration = sequential(2, 0.04, 0.01, 20)
    m = summarize(records, duration, SLO, PRICE)
    assert m["window_samples"] == {}
    assert {d.key: len(nums) for d, nums in metric_values(m)}["output_tok_per_s"] == 1


def test_cost_and_output_rate_are_one_test_even_as_single_values() -> None:
    def side(run: str, itl_s: float) -> RunSide:
        records, duration = sequential(2, 0.04, itl_s, 20)  # too short for windows: n = 1 each
        m = summarize(records, duration, SLO, PRICE)
        recs = tuple(MetricRecord(f"serving/b/c=1:{d.key}", "serving/b/c=1", d.unit, d.direction, tuple(nums))
                     for d, nums in metric_values(m) if d.key in ("output_tok_per_s", "usd_per_1m_output_tok"))
        return RunSide(run, run, "cpu", Env(), recs)

    base, cand = side("b", 0.01), side("c", 0.012)
    history = {m.name: [RunSummary(math.log(m.samples[0] * f), math.nan, 1) for f in (0.99, 1.0, 1.01, 1.0, 0.995)]
               for m in base.metrics}
    result = compare_runs(base, cand, lambda name: history[name])
    (row,) = result.rows
    (cost,) = [c for c in result.comparisons if c.same_as]
    assert row.metric.endswith(":output_tok_per_s") and cost.metric.endswith(":usd_per_1m_output_tok")
    assert row.verdict == cost.verdict == Verdict.REGRESSED and row.tests == 1
    assert cost.ratio == pytest.approx(1 / row.ratio)
