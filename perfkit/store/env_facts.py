"""Facts read from a run's environment dict (Run.env): GPU label, driver, branch, host.

Tolerant of what the profiler records: `gpus` is a list of dicts (name, driver, clocks, ...);
CPU runs are labelled by the CPU model when recorded, else "cpu".
"""

from __future__ import annotations

from typing import Any


def gpus(env: dict[str, Any]) -> list[dict[str, Any]]:
    value = env.get("gpus") or []
    return [g for g in value if isinstance(g, dict)] if isinstance(value, list) else []


def gpu_label(env: dict[str, Any]) -> str:
    """The GPU model of the run ("NVIDIA H100 80GB HBM3"), the CPU model for CPU runs, or "cpu"."""
    for g in gpus(env):
        name = g.get("name")
        if name:
            return str(name)
    for holder in (env, env.get("host") if isinstance(env.get("host"), dict) else {}):
        cpu = holder.get("cpu") if isinstance(holder, dict) else None
        if isinstance(cpu, str) and cpu.strip():
            return cpu.strip()
        if isinstance(cpu, dict):
            for key in ("model", "name", "brand", "brand_raw"):
                if cpu.get(key):
                    return str(cpu[key])
        for key in ("cpu_model", "processor"):
            if isinstance(holder, dict) and holder.get(key):
                return str(holder[key])
    return "cpu"


def gpu_driver(env: dict[str, Any]) -> str | None:
    for g in gpus(env):
        for key in ("driver", "driver_version"):
            if g.get(key):
                return str(g[key])
    for key in ("driver", "driver_version", "cuda_driver"):
        if env.get(key):
            return str(env[key])
    return None


def git(env: dict[str, Any]) -> dict[str, Any]:
    value = env.get("git")
    return value if isinstance(value, dict) else {}


def host_name(env: dict[str, Any]) -> str | None:
    host = env.get("host")
    if isinstance(host, dict):
        for key in ("hostname", "name", "node"):
            if host.get(key):
                return str(host[key])
        return None
    return str(host) if host else None
