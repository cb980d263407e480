"""The machine a run was made on, as its Env records it (host, CPU model, GPU model, driver, clock
policy), and what differs between two runs: the gate's history assumes one kind of machine."""

from __future__ import annotations

from perfkit.core.env import Env


def machine_identity(env: Env) -> dict[str, str]:
    """host, cpu, gpu, driver and clocks of a run, where its Env knows them."""
    out: dict[str, str] = {}
    if env.host:
        out["host"] = env.host
    if env.cpu.model:
        out["cpu"] = env.cpu.model
    gpus = [g.name for g in env.gpus if g.name]
    if gpus:
        out["gpu"] = gpus[0] if len(set(gpus)) == 1 else ", ".join(gpus)
    if env.driver:
        out["driver"] = env.driver
    if env.clock_policy:
        out["clocks"] = ", ".join(f"{k} {v}" for k, v in sorted(env.clock_policy.items()))
    return out


def machine_note(base: Env, cand: Env) -> str:
    """'candidate ran on another machine than the baseline: host a vs b; cpu X vs Y' ('' when
    every part both runs record is the same)."""
    b, c = machine_identity(base), machine_identity(cand)
    diffs = [f"{k} {b[k]} vs {c[k]}" for k in b if k in c and b[k] != c[k]]
    if not diffs:
        return ""
    return ("candidate ran on another machine than the baseline: " + "; ".join(diffs)
            + " (the history's spread is that of the baseline's machine: compare on one kind of runner)")
