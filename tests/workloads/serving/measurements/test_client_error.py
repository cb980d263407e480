"""The client's error bound per number, on constructed lag samples: exact expectations."""

from __future__ import annotations

import numpy as np
import pytest

from perfkit.workloads.serving.measurements.client_error import (
    BOUNDED,
    ErrorBound,
    error_bounds,
    quantile_error_bound,
    sample_share,
    sampling_half_width,
)
from perfkit.workloads.serving.records import RequestRecord


def test_no_lag_sample_bounds_nothing_and_no_values_is_refused() -> None:
    assert quantile_error_bound([0.04, 0.05], 0.5, []) == 0.0
    with pytest.raises(ValueError):
        quantile_error_bound([], 0.5, [0.001])


def test_equal_values_pay_the_best_lag_quantile() -> None:
    """Values without spread: every split costs only its lag quantile, so the bound is the lag's
    quantile at the largest split: Q_L(1 - 0.3 / 2) = Q_L(0.85)."""
    lag = [i * 1e-4 for i in range(1001)]  # 0 .. 100 ms in steps of 0.1 ms: Q_L(p) = 0.1 p s
    values = [0.04] * 200
    assert quantile_error_bound(values, 0.5, lag) == pytest.approx(0.085)
    assert quantile_error_bound(values, 0.99, lag) == pytest.approx(0.085)


def test_a_constant_lag_is_the_bound_whatever_the_values() -> None:
    """Every stamp late by the same 2 ms: every split pays 2 ms, the split e = 0 no spread."""
    values = list(np.linspace(0.01, 0.1, 50))
    assert quantile_error_bound(values, 0.5, [0.002] * 100) == pytest.approx(0.002)
    assert quantile_error_bound(values, 0.5, [0.002] * 100, scale=0.1) == pytest.approx(0.0002)


def test_a_rare_long_stall_is_let_go_when_many_samples_pay_little_spread() -> None:
    """Lag 0.1 ms except 0.5% of samples at 50 ms; 10,000 equal ITL gaps: the split e = 0.02 lets
    the stalls go (Q_L(0.99) = 0.1 ms) at no spread, where the maximum would say 50 ms."""
    lag = [1e-4] * 995 + [0.05] * 5
    gaps = [0.02] * 10_000
    assert quantile_error_bound(gaps, 0.99, lag) == pytest.approx(1e-4)


def test_the_spread_term_uses_the_widened_share() -> None:
    """Values 0, 1, ..., 100 (Q(q) = 100 q), lag 0 except a 1 s maximum: the split e = 0 costs 1 s;
    e = 0.0005 costs the lag's 0.99975 quantile plus the spread 100 x sample_share(e, 101)."""
    values = [float(i) for i in range(101)]
    lag = [0.0] * 9999 + [1.0]
    lag_q = float(np.quantile(lag, 1 - 0.0005 / 2))
    expected = min(1.0, lag_q + 100 * sample_share(0.0005, 101))
    assert quantile_error_bound(values, 0.5, lag) == pytest.approx(expected)
    assert sample_share(0.01, 100) == pytest.approx(0.01 + 3 * (0.01 * 0.99 / 100) ** 0.5)
    assert sample_share(0.0, 5) == 0.0


def _rec(i: int, sent: float, times: tuple[float, ...]) -> RequestRecord:
    return RequestRecord(index=i, scheduled_s=sent, sent_s=sent, token_times_s=times, output_tokens=len(times))


def test_error_bounds_of_a_stage_name_each_number_and_scale_tpot_by_its_tokens() -> None:
    """Four requests of 11 tokens 10 ms apart, TTFT 40 ms, every stamp up to 1 ms late (constant lag):
    TTFT / ITL / E2E bounds 1 ms, TPOT 1 ms / 10 gaps."""
    records = [_rec(i, 0.5 * i, tuple(0.5 * i + 0.04 + 0.01 * k for k in range(11))) for i in range(4)]
    bounds = error_bounds(records, [0.001] * 50)
    assert [b.metric for b in bounds] == list(BOUNDED)
    by = {b.metric: b for b in bounds}
    assert by["ttft_p50_s"] == ErrorBound("ttft_p50_s", pytest.approx(0.04), pytest.approx(0.001), pytest.approx(0.0))  # type: ignore[arg-type]
    assert by["tpot_p50_s"].bound_s == pytest.approx(1e-4) and by["tpot_p50_s"].value_s == pytest.approx(0.01)
    assert by["token_itl_p99_s"].bound_s == pytest.approx(0.001)
    assert by["e2e_p50_s"].value_s == pytest.approx(0.14) and by["e2e_p50_s"].bound_s == pytest.approx(0.001)


def test_failed_and_profiled_requests_are_left_out_and_one_token_gives_no_tpot() -> None:
    failed = RequestRecord(index=0, scheduled_s=0.0, sent_s=0.0, token_times_s=(9.0,), error="HTTP 500")
    one = _rec(1, 0.0, (0.05,))
    profiled = RequestRecord(index=2, scheduled_s=0.0, sent_s=0.0, token_times_s=(3.0, 4.0), in_profile_window=True)
    bounds = error_bounds([failed, one, profiled], [0.001])
    assert {b.metric for b in bounds} == {"ttft_p50_s", "ttft_p99_s", "e2e_p50_s"}
    assert all(b.value_s == pytest.approx(0.05) for b in bounds)
    assert error_bounds([failed], [0.001]) == []


def test_the_sampling_half_width_is_the_rank_interval_of_the_quantile() -> None:
    """Values 0 .. 100 (Q(q) = 100 q), n = 101: the p50 is uncertain by 100 x 1.96 sqrt(0.25 / 101);
    the p99's upper side is clipped at the maximum; equal values are certain."""
    values = [float(i) for i in range(101)]
    assert sampling_half_width(values, 0.5) == pytest.approx(100 * 1.96 * (0.25 / 101) ** 0.5)
    h99 = 1.96 * (0.99 * 0.01 / 101) ** 0.5
    assert sampling_half_width(values, 0.99) == pytest.approx(100 * max(h99, 0.01))
    assert sampling_half_width([0.02] * 50, 0.99) == 0.0
