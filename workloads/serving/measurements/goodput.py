"""Service-level objectives of a serving load test: per-request, run-level, and goodput.

Definitions:

- `Slo`: thresholds on TTFT, TPOT and E2E (seconds, each optional; at least one) and a quantile q.
- A request meets the SLO when it succeeded and each of its TTFT, TPOT, E2E is <= its threshold
  (perfkit.workloads.serving.measurements.latency's definitions, from the send). A request without a TPOT
  (one timed token) meets a TPOT threshold, as in vLLM (its TPOT counts as 0).
- The run meets the SLO when, for every threshold, the q-quantile (numpy "linear") of that
  metric over the succeeded requests is <= the threshold (`check_run`).
- Goodput (vLLM): requests meeting the SLO per second, and their output tokens
  (`output_tokens`) per second, over the stage's duration.
- Attainment: the fraction of the stage's requests (failed ones included: they met no SLO)
  that meet the SLO.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perfkit.workloads.serving.measurements.latency import (
    e2e_s,
    per_request,
    quantile,
    tpot_s,
    ttft_s,
)
from perfkit.workloads.serving.records import RequestRecord

_METRICS: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft_s": ttft_s, "tpot_s": tpot_s, "e2e_s": e2e_s,
}


@dataclass(frozen=True)
class Slo:
    """Thresholds in seconds (None: no objective on that metric) and the run-level quantile q:
    the run meets a threshold when the q-quantile of the metric is <= it. Invalid values raise
    ValueError (the spec that gives them reports where)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    quantile: float = 0.99

    def __post_init__(self) -> None:
        given = self.thresholds()
        if not given:
            raise ValueError("an SLO needs at least one of ttft_s, tpot_s, e2e_s")
        for name, value in given.items():
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"SLO {name} must be a number > 0, not {value}")
        if not 0.0 < self.quantile <= 1.0:
            raise ValueError(f"SLO quantile must be in (0, 1], not {self.quantile}")

    def thresholds(self) -> dict[str, float]:
        """The thresholds that are set, by metric name."""
        pairs = (("ttft_s", self.ttft_s), ("tpot_s", self.tpot_s), ("e2e_s", self.e2e_s))
        return {k: float(v) for k, v in pairs if v is not None}


def meets(r: RequestRecord, slo: Slo) -> bool:
    """Whether one request succeeded and meets every threshold of `slo`."""
    if not r.ok:
        return False
    for name, limit in slo.thresholds().items():
        value = _METRICS[name](r)
        if name == "tpot_s" and value is None:
            continue  # one timed token: no TPOT, as vLLM's 0
        if value is None or value > limit:
            return False
    return True


@dataclass(frozen=True)
class SloCheck:
    """One threshold against the run's quantile of its metric."""

    metric: str  # ttft_s / tpot_s / e2e_s
    quantile: float  # q
    value_s: float | None  # the q-quantile over the succeeded requests (None: no such value)
    threshold_s: float

    @property
    def met(self) -> bool:
        return self.value_s is not None and self.value_s <= self.threshold_s


def check_run(records: Sequence[RequestRecord], slo: Slo) -> list[SloCheck]:
    """Each threshold of `slo` against the q-quantile of its metric over the succeeded requests."""
    out = []
    for name, limit in slo.thresholds().items():
        values = per_request(records, _METRICS[name])
        value = quantile(values, slo.quantile) if values else None
        out.append(SloCheck(name, slo.quantile, value, limit))
    return out


@dataclass(frozen=True)
class Goodput:
    requests: int  # requests meeting the SLO
    output_tokens: int  # their output tokens
    req_per_s: float | None  # None when the duration is not > 0
    tok_per_s: float | None
    attainment: float | None  # fraction of all requests meeting it (None: no requests)


def goodput(records: Sequence[RequestRecord], duration_s: float, slo: Slo) -> Goodput:
    """Requests (and their output tokens) meeting every threshold, per second of the stage."""
    good = [r for r in records if meets(r, slo)]
    tokens = sum(r.output_tokens for r in good)
    per_s = duration_s > 0 and math.isfinite(duration_s)
    return Goodput(
        requests=len(good), output_tokens=tokens,
        req_per_s=len(good) / duration_s if per_s else None,
        tok_per_s=tokens / duration_s if per_s else None,
        attainment=len(good) / len(records) if records else None,
    )
