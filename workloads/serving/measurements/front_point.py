"""The `front` point of a serving workload: cost at each target interactivity (tok/s per user),
interpolated along the throughput-vs-interactivity Pareto front of the stages measured before
it in the same run (perfkit.workloads.serving.measurements.front: monotone cubic, never extrapolated)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfkit.core.errors import PerfkitError
from perfkit.core.record import STATUS_OK, PointResult
from perfkit.workloads.serving.client.plan import price_of
from perfkit.workloads.serving.measurements.front import at_target, stage_point
from perfkit.workloads.serving.spec import ServingSpec


def target_key(target: float) -> str:
    """The metric of the cost at one target: usd_per_1m_output_tok_at_20_tok_per_user."""
    return f"usd_per_1m_output_tok_at_{target:g}_tok_per_user".replace(".", "_")


def front_metrics(spec: ServingSpec, earlier: Sequence[PointResult]) -> dict[str, Any]:
    price = price_of(spec)
    assert price is not None  # the spec asks for a price with target_interactivity
    stages = []
    for p in earlier:
        if p.workload != spec.label or p.status != STATUS_OK or "front" in p.params:
            continue
        tpot, tput = p.metrics.get("tpot_p50_s"), p.metrics.get("output_tok_per_s")
        sp = stage_point(p.key.rsplit("/", 1)[-1], tpot if isinstance(tpot, float) else None,
                         tput if isinstance(tput, float) else None, price.gpus)
        if sp is not None and not p.metrics.get("client_bound"):
            stages.append(sp)
    if len(stages) < 2:
        raise PerfkitError(f"serving/{spec.label}: the cost front needs two or more stages measured "
                           f"without client-bound warnings, got {len(stages)}; add load levels")
    out: dict[str, Any] = {"front_stages": [s.name for s in stages]}
    notes = []
    for target in spec.target_interactivity:
        res = at_target(stages, target, price)
        if res.usd_per_1m_output_tok is not None:
            out[target_key(target)] = res.usd_per_1m_output_tok
            out[f"throughput_per_gpu_at_{target:g}_tok_per_user".replace(".", "_")] = res.throughput_tok_per_s_per_gpu
        else:
            notes.append(res.reason)
    if notes:
        out["serving_notes"] = notes
    return out
