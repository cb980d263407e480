"""Can two runs be compared at all? Reasons they cannot: another GPU model, driver, clock
policy, a throttled GPU, or (per point) other parameters (dtype, shapes) or measurement settings.

Pure functions over the run environment dicts (Run.env) and point descriptions.
"""

from __future__ import annotations

from typing import Any

# Keys of a GPU's `clocks` dict that describe the clock policy (not an instantaneous reading).
_POLICY_CLOCK_WORDS = ("max", "app", "locked", "lock", "limit", "base", "target")
# Throttle / clock-event reasons that do not slow a kernel down.
_BENIGN_THROTTLE = {"", "none", "idle", "gpu_idle", "applications_clocks_setting", "app_clocks", "0"}
MEASUREMENT_KEYS = ("timer", "flush_l2", "cuda_graph", "calls_per_sample")


def _gpus(env: dict[str, Any]) -> list[dict[str, Any]]:
    value = env.get("gpus") or []
    return [g for g in value if isinstance(g, dict)] if isinstance(value, list) else []


def _first(gpus: list[dict[str, Any]], *keys: str) -> Any:
    for g in gpus:
        for k in keys:
            if g.get(k) not in (None, ""):
                return g[k]
    return None


def throttle_reasons(env: dict[str, Any]) -> list[str]:
    """Active throttle reasons that slow kernels (hw_slowdown, sw_thermal, power cap, ...)."""
    out: list[str] = []
    sources = [*_gpus(env), env]
    for holder in sources:
        for key in ("throttle_reasons", "throttle", "clocks_event_reasons", "clock_event_reasons"):
            value = holder.get(key)
            if value is None or value is False:
                continue
            items: list[Any]
            if isinstance(value, dict):
                items = [k for k, v in value.items() if v]
            elif isinstance(value, (list, tuple)):
                items = list(value)
            else:
                items = [value]
            for item in items:
                name = str(item).strip().lower()
                if name not in _BENIGN_THROTTLE and name not in out:
                    out.append(name)
    return out


def _clock_policy(env: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    clocks = _first(_gpus(env), "clocks")
    if isinstance(clocks, dict):
        out.update({k: v for k, v in clocks.items() if any(w in k.lower() for w in _POLICY_CLOCK_WORDS)})
    for key in ("clock_control", "clocks_locked"):
        if key in env:
            out[key] = env[key]
    return out


def run_reasons(base_env: dict[str, Any], cand_env: dict[str, Any], base_gpu: str, cand_gpu: str) -> list[str]:
    """Why two runs' numbers cannot be compared (empty when they can)."""
    reasons = []
    if base_gpu != cand_gpu:
        reasons.append(f"GPU differs: {base_gpu} vs {cand_gpu}")
    bg, cg = _gpus(base_env), _gpus(cand_env)
    if bg and cg and len(bg) != len(cg):
        reasons.append(f"GPU count differs: {len(bg)} vs {len(cg)}")
    bd, cd = _first(bg, "driver", "driver_version"), _first(cg, "driver", "driver_version")
    if bd and cd and str(bd) != str(cd):
        reasons.append(f"driver differs: {bd} vs {cd}")
    bc, cc = _clock_policy(base_env), _clock_policy(cand_env)
    for key in sorted(set(bc) & set(cc)):
        if bc[key] != cc[key]:
            reasons.append(f"clocks differ: {key} {bc[key]} vs {cc[key]}")
    for side, env in (("baseline", base_env), ("candidate", cand_env)):
        active = throttle_reasons(env)
        if active:
            reasons.append(f"{side} throttled: {', '.join(active)}")
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
