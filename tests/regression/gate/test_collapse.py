"""collapse.py: counts decide where the log scale cannot (a share at 0, a rate at 0, a cost at
infinity), with intervals that allow 0 and infinity; too few requests stay inconclusive."""

from __future__ import annotations

import math

from perfkit.core.direction import HIGHER, LOWER
from perfkit.regression.gate.collapse import count_test, decide_counts, needs_counts
from perfkit.regression.gate.types import MetricPolicy, Verdict


def _stage(share: float, n: int = 16, dur: float = 2.0) -> dict[str, object]:
    return {"slo_attainment": share, "requests_ok": float(n), "requests_failed": 0.0, "duration_s": dur,
            "goodput_tok_per_s": share * n * 4 / dur}


def test_only_counted_metrics_that_the_log_scale_cannot_test_are_counted() -> None:
    assert needs_counts("slo_attainment", [1.0] * 8, [0.0])
    assert needs_counts("goodput_tok_per_s", [5.0] * 8, [5.0])  # one value on a side
    assert not needs_counts("slo_attainment", [1.0] * 8, [0.9] * 8)
    assert not needs_counts("ttft_p50_s", [1.0], [0.0])


def test_attainment_to_zero_is_regressed_and_one_in_sixteen_of_two_is_not() -> None:
    pol = MetricPolicy()
    col = count_test("p:slo_attainment", "slo_attainment", HIGHER, "", pol, [1.0] * 8, [0.0], _stage(1.0),
                     _stage(0.0), "p", "p")
    assert col is not None
    c = decide_counts(col, 20)
    assert c.verdict == Verdict.REGRESSED and c.ratio == 0.0 and c.ci_low == 0.0 and c.ci_high < 0.5
    assert "16/16 -> 0/16" in c.interval_of
    few = count_test("p:slo_attainment", "slo_attainment", HIGHER, "", pol, [1.0], [0.5], _stage(1.0, 2),
                     _stage(0.5, 2), "p", "p")
    assert few is not None and decide_counts(few, 20).verdict == Verdict.INCONCLUSIVE


def test_cost_at_slo_to_infinity_has_an_interval_to_infinity() -> None:
    col = count_test("p:usd_per_1m_output_tok_at_slo", "usd_per_1m_output_tok_at_slo", LOWER, "USD",
                     MetricPolicy(), [2.5], [math.inf], _stage(1.0), _stage(0.0, dur=4.0), "p", "p")
    assert col is not None
    c = decide_counts(col, 20)
    assert c.verdict == Verdict.REGRESSED and c.ratio == math.inf and c.ci_high == math.inf and c.ci_low > 1.0
    assert "Poisson" in c.interval_of
