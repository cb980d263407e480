"""Why a serving stage moved (perfkit/regression/serving_why.py) from summarize()'s metrics of
hand-built closed loops: the part that changed is named, the parts add up to the change of a
request's time, and an unchanged stage names nothing."""

from __future__ import annotations

import pytest

from perfkit.regression.serving_why import (
    FAILURES,
    OUTPUT_LENGTH,
    QUEUEING,
    TPOT,
    TTFT,
    explain,
    explain_stage,
)
from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.goodput import Slo
from perfkit.workloads.serving.measurements.summary import summarize
from perfkit.workloads.serving.records import RequestRecord
from tests.helpers.serving_records import rec

PRICE = Price(2.99, 1, "test")
SLO = Slo(ttft_s=0.5, tpot_s=0.05)


def stage(ttft_s: float = 0.04, itl_s: float = 0.01, tokens: int = 32, queue_s: float = 0.0,
          failed: int = 0, n: int = 16) -> dict[str, object]:
    """summarize() of a closed loop of one: each request waits queue_s in the client after its
    scheduled arrival; the last `failed` requests fail."""
    records: list[RequestRecord] = []
    t = 0.0
    for i in range(n):
        if i >= n - failed:
            records.append(rec(i, t, t + queue_s, error="HTTP 500: boom"))
            t += queue_s + 0.001
            continue
        sent = t + queue_s
        times = tuple(sent + ttft_s + j * itl_s for j in range(tokens))
        records.append(rec(i, t, sent, times))
        t = times[-1] + 0.001
    return summarize(records, t, SLO, PRICE)


BASE = stage()


@pytest.mark.parametrize(("cand", "cause"), [
    (stage(itl_s=0.012), TPOT),
    (stage(ttft_s=0.2), TTFT),
    (stage(tokens=48), OUTPUT_LENGTH),
    (stage(queue_s=0.1), QUEUEING),
    (stage(failed=4), FAILURES),
])
def test_the_part_that_changed_is_named(cand: dict[str, object], cause: str) -> None:
    why = explain_stage("s", BASE, cand, "serve-bench concurrency=1")
    assert why is not None
    assert why.cause == cause
    assert f"mostly {cause} " in why.text
    assert why.text.startswith("E2E p50 ")
    assert why.label == "serve-bench concurrency=1"


def test_the_time_parts_add_up_to_the_change_of_a_request() -> None:
    cand = stage(ttft_s=0.05, itl_s=0.011, tokens=40)
    why = explain_stage("s", BASE, cand)
    assert why is not None
    total = sum(p.delta_s for p in why.parts if p.delta_s is not None)
    e2e_b, e2e_c = BASE["e2e_p50_s"], cand["e2e_p50_s"]
    assert isinstance(e2e_b, float) and isinstance(e2e_c, float)
    assert total == pytest.approx(e2e_c - e2e_b, rel=1e-6)  # equal requests: the mean is the median
    tpot = next(p for p in why.parts if p.name == TPOT)
    assert tpot.delta_s == pytest.approx(0.001 * 31)


def test_a_slower_itl_moves_cost_and_throughput_and_says_by_how_much() -> None:
    why = explain_stage("s", BASE, stage(itl_s=0.012))
    assert why is not None
    moved = dict(why.moved)
    assert moved["output tok/s"] < 0.9 and moved["USD/1M output tok"] > 1.1
    assert "TPOT 10 ms -> 12 ms" in why.text


def test_an_unchanged_stage_names_nothing() -> None:
    why = explain_stage("s", BASE, stage())
    assert why is not None and why.cause == ""
    assert "no component moved" in why.text


def test_server_metrics_that_moved_are_listed() -> None:
    cand = {**stage(itl_s=0.012), "server_prefix_cache_hit_rate": 0.2, "server_preemptions": 3.0}
    base = {**BASE, "server_prefix_cache_hit_rate": 0.8, "server_preemptions": 0.0}
    why = explain_stage("s", base, cand)
    assert why is not None
    assert ("prefix-cache hit rate", 0.8, 0.2) in why.server
    assert "server: prefix-cache hit rate 80% -> 20%, preemptions 0 -> 3" in why.text


def test_only_serving_stages_in_both_runs_are_explained() -> None:
    out = explain({"a": BASE, "gemm": {"x": 1.0}}, {"a": stage(ttft_s=0.2), "gemm": {"x": 2.0}, "b": BASE})
    assert [w.point_key for w in out] == ["a"]
    assert out[0].to_json()["cause"] == TTFT


def test_a_stage_the_gate_found_unchanged_reads_within_noise() -> None:
    from perfkit.regression.serving_why import explain

    base = {"s": stage()}
    cand = {"s": stage(itl_s=0.0102)}
    noisy = explain(base, cand, changed=set())[0]
    assert not noisy.significant and noisy.text.startswith("within noise: ")
    assert noisy.to_json()["significant"] is False
    moved = explain(base, cand, changed={"s"})[0]
    assert moved.significant and not moved.text.startswith("within noise")
