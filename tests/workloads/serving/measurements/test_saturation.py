"""The saturation verdict of an open-loop stage: growing waits from arrival, or not."""

from __future__ import annotations

from perfkit.workloads.serving.measurements.saturation import saturation_reason
from tests.helpers.serving_records import rec


def _stage(wait_of: list[float], gap_s: float = 0.1) -> list:  # type: ignore[type-arg]
    """Requests arriving every gap_s, sent at once, first token after its wait, 10 tokens 5 ms apart."""
    out = []
    for i, wait in enumerate(wait_of):
        t0 = i * gap_s
        first = t0 + wait
        out.append(rec(i, t0, t0, tuple(first + k * 0.005 for k in range(10))))
    return out


def test_waits_that_keep_growing_are_saturation() -> None:
    reason = saturation_reason(_stage([0.02 + 0.05 * i for i in range(16)]), 10.0)
    assert reason is not None and reason.startswith("saturated: at 10 requests/s offered")


def test_steady_waits_and_small_jitter_are_not() -> None:
    assert saturation_reason(_stage([0.02] * 16), 10.0) is None
    assert saturation_reason(_stage([0.02, 0.03] * 8), 10.0) is None  # within ten TPOTs
    assert saturation_reason(_stage([0.02 + 0.05 * i for i in range(6)]), 10.0) is None  # too few to tell
