"""Run-record schema versions, and how older records are brought up to the current one.

1  the env was an untyped dict: profiler fields (`cpu_model`, `cpu_cores`, `versions.num_threads`,
   ...), and the ingesters' own shapes (CSV: `source: {"csv": path}`; pytest-benchmark:
   `host: {"hostname": ...}`, `cpu: {"model": ...}`, `source: {"pytest-benchmark": path}`)
2  the env is `perfkit.core.env.Env` (cpu / gpus / git / versions / source typed); keys of a
   version-1 env that 2 has no field for are kept under `env.extra`
"""

from __future__ import annotations

from typing import Any

from perfkit.core.codec import RecordError, from_builtins, shown_value
from perfkit.core.env import Env
from perfkit.core.errors import StoreError

SCHEMA_VERSION = 2

# version-1 env keys that version 2 keeps as they are (the rest are renamed, typed or moved)
_V1_SAME = ("host", "os", "python", "git", "gpu_available", "gpu_reason", "gpus", "gpus_after",
            "device", "roofline", "quick")
_V1_MOVED = ("cpu_model", "cpu_cores", "cpu", "versions", "source")


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a run record (parsed run.json) of any known schema version up to SCHEMA_VERSION."""
    version = data.get("schema_version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise RecordError(f"{shown_value(version)} is not a whole number", "schema_version")
    if version == SCHEMA_VERSION:
        return data
    if version == 1:
        env = data.get("env") or {}
        return {**data, "schema_version": SCHEMA_VERSION,
                "env": env_v1_to_v2(env) if isinstance(env, dict) else env}
    raise StoreError(
        f"run record has schema_version {version!r}; this perfkit reads 1 to {SCHEMA_VERSION}; "
        "upgrade perfkit"
    )


def env_data(env: Any, version: int) -> dict[str, Any]:
    """The version-2 form of an env dict stored under record schema `version` (store rows)."""
    if not isinstance(env, dict):
        raise RecordError(f"Expected `object`, got `{type(env).__name__}` - at `$.env`")
    if version == SCHEMA_VERSION:
        return env
    if version == 1:
        return env_v1_to_v2(env)
    raise StoreError(f"stored env has record schema {version}; this perfkit reads 1 to {SCHEMA_VERSION}; "
                     "upgrade perfkit")


def env_v1_to_v2(env: dict[str, Any]) -> dict[str, Any]:
    """A version-1 env dict (profiler, CSV or pytest-benchmark shape) in the version-2 shape."""
    out = {k: env[k] for k in _V1_SAME if k in env}
    host = env.get("host")
    if isinstance(host, dict):  # pytest-benchmark: {"hostname": machine_info.node}
        out["host"] = host.get("hostname")
    versions = dict(env.get("versions") or {})
    cpu_v1 = env.get("cpu")
    cpu: dict[str, Any] = cpu_v1 if isinstance(cpu_v1, dict) else {}
    out["cpu"] = {
        "model": env.get("cpu_model") or cpu.get("model"),
        "cores": env.get("cpu_cores"),
        "threads": versions.pop("num_threads", None),
    }
    out["versions"] = versions
    extra = {k: v for k, v in env.items() if k not in _V1_SAME + _V1_MOVED}
    source = env.get("source")
    if source is not None:
        out["source"] = _source_v1(source)
        if out["source"] is None:
            extra["source"] = source
    if extra:
        out["extra"] = extra
    return out


def _source_v1(source: Any) -> dict[str, Any] | None:
    """{"csv": path} or {"pytest-benchmark": path, "version": v} -> {format, path, version}."""
    for fmt in ("csv", "pytest-benchmark"):
        if isinstance(source, dict) and fmt in source:
            version = source.get("version")
            return {"format": fmt, "path": str(source[fmt]),
                    "version": str(version) if version is not None else None}
    return None


def load_env(data: Any, version: int) -> Env:
    """The Env a stored env dict (JSON) of record schema `version` describes.

    RecordError when it does not fit; StoreError for a schema version this perfkit does not know.
    """
    return from_builtins(Env, env_data(data, version))
