"""Can two runs be compared at all? Reasons they cannot: another GPU model, driver, clock
policy (max / application clocks), a GPU throttled before the run, or (per point) other
parameters (dtype, shapes) or measurement settings.

Pure functions over the typed run environments (perfkit.core.env.Env) and point descriptions.
"""

from __future__ import annotations

from typing import Any

from perfkit.core.env import Env

# How a point was timed, by settings. Not `calls_per_sample`: the timer derives it from the
# call's duration (a call that got slower can cross the clock's floor) and samples are seconds
# per call either way, so refusing on it would hide exactly the regressions that moved it.
MEASUREMENT_KEYS = ("timer", "flush_l2", "cuda_graph")


def run_reasons(base_env: Env, cand_env: Env, base_gpu: str, cand_gpu: str) -> list[str]:
    """Why two runs' numbers cannot be compared (empty when they can)."""
    reasons = []
    if base_gpu != cand_gpu:
        reasons.append(f"GPU differs: {base_gpu} vs {cand_gpu}")
    bg, cg = base_env.gpus, cand_env.gpus
    if bg and cg and len(bg) != len(cg):
        reasons.append(f"GPU count differs: {len(bg)} vs {len(cg)}")
    bd, cd = base_env.driver, cand_env.driver
    if bd and cd and bd != cd:
        reasons.append(f"driver differs: {bd} vs {cd}")
    bc, cc = base_env.clock_policy, cand_env.clock_policy
    for key in sorted(set(bc) & set(cc)):
        if bc[key] != cc[key]:
            reasons.append(f"clocks differ: {key} {bc[key]} vs {cc[key]}")
    for side, env in (("baseline", base_env), ("candidate", cand_env)):
        if env.throttled:
            reasons.append(f"{side} throttled: {', '.join(env.throttled)}")
    return reasons


def point_reasons(base_point: dict[str, Any] | None, cand_point: dict[str, Any] | None) -> list[str]:
    """Why one point's metrics cannot be compared: other params (dtype, shape) or measurement."""
    if not base_point or not cand_point:
        return []
    reasons = []
    bp, cp = base_point.get("params") or {}, cand_point.get("params") or {}
    for key in sorted(set(bp) | set(cp)):
        if bp.get(key) != cp.get(key):
            reasons.append(f"{key} differs: {bp.get(key)} vs {cp.get(key)}")
    bm, cm = base_point.get("measurement") or {}, cand_point.get("measurement") or {}
    for key in MEASUREMENT_KEYS:
        if key in bm and key in cm and bm[key] != cm[key]:
            reasons.append(f"measurement {key} differs: {bm[key]} vs {cm[key]}")
    return reasons
