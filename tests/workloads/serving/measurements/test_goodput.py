"""Per-request and run-level SLOs, goodput and attainment from hand-built records."""

from __future__ import annotations

import pytest

from perfkit.workloads.serving.measurements.goodput import Slo, check_run, goodput, meets
from tests.helpers.serving_records import rec

# TTFT 0.1 / 0.2 / 0.4 s; TPOT 0.01 / 0.05 / 0.01 s (11 timed tokens each); one failure
RECORDS = [
    rec(0, 0.0, 0.0, times=tuple(0.1 + 0.01 * i for i in range(11)), output_tokens=11),
    rec(1, 0.0, 0.0, times=tuple(0.2 + 0.05 * i for i in range(11)), output_tokens=11),
    rec(2, 0.0, 0.0, times=tuple(0.4 + 0.01 * i for i in range(11)), output_tokens=11),
    rec(3, 0.0, 0.0, error="timeout: no answer in 30 s"),
]


def test_a_request_meets_the_slo_when_it_meets_every_threshold() -> None:
    slo = Slo(ttft_s=0.3, tpot_s=0.02)
    assert [meets(r, slo) for r in RECORDS] == [True, False, False, False]
    assert [meets(r, Slo(ttft_s=0.3)) for r in RECORDS] == [True, True, False, False]
    one_token = rec(4, 0.0, 0.0, times=(0.1,))  # no TPOT: meets a TPOT threshold (vLLM's 0)
    assert meets(one_token, Slo(tpot_s=0.001)) and not meets(one_token, Slo(ttft_s=0.05))


def test_goodput_counts_good_requests_and_their_tokens_per_second() -> None:
    g = goodput(RECORDS, duration_s=2.0, slo=Slo(ttft_s=0.3))
    assert (g.requests, g.output_tokens) == (2, 22)
    assert g.req_per_s == pytest.approx(1.0) and g.tok_per_s == pytest.approx(11.0)
    assert g.attainment == pytest.approx(2 / 4)  # the failed request counts, unmet
    empty = goodput([], 0.0, Slo(e2e_s=1.0))
    assert empty.req_per_s is None and empty.tok_per_s is None and empty.attainment is None


def test_the_run_meets_a_threshold_by_its_quantile() -> None:
    # TTFTs of the succeeded requests: 0.1, 0.2, 0.4 -> p50 0.2, p99 0.2 + 0.98 x 0.2 = 0.396
    p50 = {c.metric: c for c in check_run(RECORDS, Slo(ttft_s=0.25, quantile=0.5))}
    assert p50["ttft_s"].value_s == pytest.approx(0.2) and p50["ttft_s"].met
    p99 = {c.metric: c for c in check_run(RECORDS, Slo(ttft_s=0.25, tpot_s=0.06))}
    assert p99["ttft_s"].value_s == pytest.approx(0.396) and not p99["ttft_s"].met
    assert p99["tpot_s"].met
    none = check_run([RECORDS[3]], Slo(e2e_s=1.0))
    assert none[0].value_s is None and not none[0].met


@pytest.mark.parametrize("kwargs", [{}, {"ttft_s": 0.0}, {"tpot_s": -1.0},
                                    {"e2e_s": float("nan")}, {"ttft_s": 1.0, "quantile": 0.0},
                                    {"ttft_s": 1.0, "quantile": 1.5}])
def test_invalid_slos_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Slo(**kwargs)
