"""Can two runs be compared at all? Reasons they cannot: another GPU model, driver, clock
policy (max / application clocks), a GPU throttled before the run, or (per point) other
parameters (dtype, shapes) or measurement settings.

Pure functions over the typed run environments (perfkit.core.env.Env) and point descriptions.
"""

from __future__ import annotations

from perfkit.core.env import Env
from perfkit.core.point_spec import TIMING_KEYS, PointSpec


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


def point_reasons(base_point: PointSpec | None, cand_point: PointSpec | None) -> list[str]:
    """Why one point's metrics cannot be compared: other params (dtype, shape) or measurement."""
    if base_point is None or cand_point is None:
        return []
    reasons = [f"{side} {p.refusal}" for side, p in (("baseline", base_point), ("candidate", cand_point))
               if p.refusal]
    bp, cp = base_point.params, cand_point.params
    for key in sorted(set(bp) | set(cp)):
        if bp.get(key) != cp.get(key):
            reasons.append(f"{key} differs: {bp.get(key)} vs {cp.get(key)}")
    bm, cm = base_point.timing, cand_point.timing
    for key in TIMING_KEYS:
        if key in bm and key in cm and bm[key] != cm[key]:
            reasons.append(f"measurement {key} differs: {bm[key]} vs {cm[key]}")
    return reasons
