"""A stage's numbers as a typed record: built by summary.py, written in run.json's shape, read
back from any run.json (one made before the record existed too), one spelling per key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfkit.core.metric_defs import BY_KEY
from perfkit.core.record import load_run
from perfkit.workloads.serving.measurements.cost import Price
from perfkit.workloads.serving.measurements.goodput import Slo
from perfkit.workloads.serving.measurements.stage_numbers import FIELDS, StageNumbers
from perfkit.workloads.serving.measurements.summary import stage_numbers, summarize
from tests.helpers.serving_records import rec

OLD_RUN = Path(__file__).resolve().parents[3] / "data" / "serving" / "run_before_stage_numbers.json"


def test_a_run_json_from_before_the_record_loads_and_round_trips() -> None:
    run = load_run(OLD_RUN)
    stages = [p for p in run.points if p.kind == "serving" and p.status == "ok"]
    assert len(stages) == 2
    for p in stages:
        numbers = StageNumbers.from_metrics(p.metrics)
        assert numbers.as_metrics() == p.metrics  # the JSON shape is unchanged, nothing lost
        assert isinstance(numbers.ttft_p50_s, float) and numbers.ttft_p50_s > 0
        assert numbers.requests_ok == 6.0 and numbers.token_source == "usage"
        assert numbers.server_metrics and numbers.server_metrics["server_generation_tokens"] == 48.0
        assert numbers.window_samples and "output_tok_per_s" in numbers.window_samples
        assert dict(numbers.extra) == {"timing_skipped": p.metrics["timing_skipped"]}  # the pipeline's own


def test_a_key_spelled_another_way_is_read_under_its_one_spelling() -> None:
    numbers = StageNumbers.from_metrics({"goodput_request_per_s": 2.5, "e2e_from_schedule_p50_s": 0.3})
    assert numbers.goodput_req_per_s == 2.5 and numbers.e2e_sched_p50_s == 0.3
    assert numbers.as_metrics() == {"goodput_req_per_s": 2.5, "e2e_sched_p50_s": 0.3}


def test_a_value_of_another_type_stays_as_it_was() -> None:
    numbers = StageNumbers.from_metrics({"ttft_p50_s": "fast", "requests_ok": True, "source": "vllm"})
    assert numbers.ttft_p50_s is None and numbers.requests_ok is None
    assert numbers.as_metrics() == {"ttft_p50_s": "fast", "requests_ok": True, "source": "vllm"}
    assert numbers.number("ttft_p50_s") is None and numbers.number("token_source") is None


def test_summary_builds_the_record_and_every_number_field_is_described() -> None:
    records = [rec(i, 0.1 * i, 0.1 * i, times=tuple(0.1 * i + 0.05 + 0.01 * k for k in range(8))) for i in range(6)]
    slo, price = Slo(ttft_s=1.0), Price(2.0, 1, "s")
    numbers = stage_numbers(records, 1.0, slo, price)
    assert numbers.as_metrics() == summarize(records, 1.0, slo, price)
    assert numbers.requests_ok == 6.0 and numbers.goodput_req_per_s == 6.0 and numbers.usd_per_1m_output_tok
    floats = [f.name for f in FIELDS if f.type == "float | None"]
    assert len(floats) >= 40 and [k for k in floats if k not in BY_KEY] == []
    assert dataclasses.replace(numbers, saturated="x").as_metrics()["saturated"] == "x"
