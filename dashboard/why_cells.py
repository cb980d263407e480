"""The Overview's serving cells of a run against its baseline, from the gate's serving attribution
(GateResult.why, perfkit.regression.serving_why) as it is: the cost change of the stage whose cost
moved most (among the stages the gate found a change in, else all) and what moved that stage, in
the words `perfkit compare` prints. Picks and formats; computes no statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.core.metric_defs import metric_def
from perfkit.core.units import fmt_change
from perfkit.regression.serving_why import ServingWhy, part_text

COST = metric_def("usd_per_1m_output_tok").label  # how the attribution names the cost it moved
WITHIN_NOISE = "within noise"


@dataclass(frozen=True)
class WhyCells:
    cost: str  # '+36.9%' (the stage's USD per 1M output tokens, candidate vs baseline); '' when unknown
    why: str  # 'serve-bench concurrency=2: TPOT 40 ms -> 56 ms (+112 ms per request, +36.9% of its time)'


def cost_ratio(w: ServingWhy) -> float | None:
    ratio = dict(w.moved).get(COST)
    return ratio if ratio is not None and ratio > 0 and math.isfinite(ratio) else None


def headline_stage(why: Sequence[ServingWhy]) -> ServingWhy | None:
    """The stage whose cost moved most, among those the gate found a change in (else all); the
    first stage when none has a cost (no price given)."""
    pool = [w for w in why if w.significant] or list(why)
    if not pool:
        return None
    return max(pool, key=lambda w: abs(math.log(cost_ratio(w) or 1.0)))


def why_cells(why: Sequence[ServingWhy]) -> WhyCells:
    """('', '') for a run without serving stages compared."""
    w = headline_stage(why)
    if w is None:
        return WhyCells("", "")
    ratio = cost_ratio(w)
    cost = fmt_change(ratio if abs(ratio - 1.0) > 1e-9 else 1.0) if ratio is not None else ""  # as the why text
    if not w.significant:
        return WhyCells(cost, f"{w.label}: {WITHIN_NOISE}")
    if not w.cause:
        return WhyCells(cost, f"{w.label}: {w.text}")
    return WhyCells(cost, f"{w.label}: {part_text(w.parts[0])}")
