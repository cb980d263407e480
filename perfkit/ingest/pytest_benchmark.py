"""`perfkit ingest --format pytest-benchmark`: a `pytest --benchmark-json` file as one run.

Each benchmark becomes metric `<fullname>:time_s` (lower is better) with its per-round times
(`stats.data`) as samples, or its median alone when the file has no raw data. The commit, branch
and time come from `commit_info` and `datetime`; the GPU label from --gpu, else the CPU model.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from perfkit.core.direction import LOWER
from perfkit.core.env import CpuState, Env, GitState, GpuState, Source
from perfkit.core.errors import StoreError
from perfkit.core.json_file import parse_json_bytes
from perfkit.store.metrics import MetricRecord
from perfkit.store.records import SOURCE_PYTEST_BENCHMARK, StoredRun, iso_utc


def parse_pytest_benchmark(path: str | Path, gpu: str | None = None, branch: str | None = None) -> list[StoredRun]:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise StoreError(f"{p}: cannot read ({exc.strerror}); pass a pytest --benchmark-json file") from None
    data = parse_json_bytes(raw, p, "pass a pytest --benchmark-json file")  # UTF-8, depth, syntax: one line
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise StoreError(f"{p}: no 'benchmarks' list; not a pytest-benchmark JSON file (pytest --benchmark-json)")
    commit_info, machine = (_section(data, key, p) for key in ("commit_info", "machine_info"))
    when = data.get("datetime") or commit_info.get("time")
    if not when:
        raise StoreError(f"{p}: no 'datetime'; cannot order this run among commits")
    try:
        created = iso_utc(str(when))
    except ValueError:
        raise StoreError(f"{p}: datetime {when!r} is not ISO 8601") from None
    metrics = []
    for i, bench in enumerate(data["benchmarks"]):
        where = f"{p}: benchmarks[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("stats"), dict):
            raise StoreError(f"{where}: no 'stats'; not a pytest-benchmark result")
        name = bench.get("fullname") or bench.get("name")
        if not name:
            raise StoreError(f"{where}: no 'fullname' or 'name'")
        stats = bench["stats"]
        values = stats.get("data") or ([stats["median"]] if "median" in stats else None)
        if not values:
            raise StoreError(f"{where} ({name}): stats has neither 'data' nor 'median'")
        samples = _samples(values, f"{where} ({name})")
        if not all(math.isfinite(v) and v > 0 for v in samples):
            raise StoreError(f"{where} ({name}): times must be finite and > 0")
        metrics.append(MetricRecord(f"{name}:time_s", None, "s", LOWER, samples))
    if not metrics:
        raise StoreError(f"{p}: 'benchmarks' is empty; nothing to ingest")
    cpu_info = machine.get("cpu")
    cpu: dict[str, Any] = cpu_info if isinstance(cpu_info, dict) else {}
    model = _cpu_model(cpu)
    label = gpu or model or machine.get("processor") or "cpu"
    commit = commit_info.get("id")
    env = Env(
        host=_opt_str(machine.get("node")),
        python=_opt_str(machine.get("python_version")),
        git=GitState(commit=_opt_str(commit), branch=branch or _opt_str(commit_info.get("branch")),
                     dirty=_opt_bool(commit_info.get("dirty"))),
        cpu=CpuState(model=model, cores=_opt_int(cpu.get("count"))),
        gpus=(GpuState(name=gpu),) if gpu else (),
        source=Source(format=SOURCE_PYTEST_BENCHMARK, path=str(p), version=_opt_str(data.get("version"))),
    )
    return [StoredRun(
        run_id=f"pytest-benchmark-{hashlib.sha256(raw).hexdigest()[:20]}",
        created=created,
        gpu=str(label),
        device="external",
        status="complete",
        source=SOURCE_PYTEST_BENCHMARK,
        env=env,
        metrics=tuple(metrics),
        commit=env.git.commit,
        branch=env.git.branch,
        dirty=env.git.dirty,
        host=env.host,
    )]


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """An optional object of the file ({} when absent or null); StoreError when it is another type."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StoreError(f"{path}: {key} is {str(json.dumps(value))[:60]}, not an object; store the file "
                         "pytest-benchmark wrote, unedited")
    return value


def _samples(values: Any, where: str) -> tuple[float, ...]:
    """stats.data (or the median alone) as floats; the first item that is not a number is named."""
    if not isinstance(values, list):
        values = [values]
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise StoreError(f"{where}: stats.data[{i}] is {str(json.dumps(v))[:60]}, not a number "
                             f"(of {len(values)} items); store the file pytest-benchmark wrote, unedited")
    return tuple(float(v) for v in values)


def _cpu_model(cpu: dict[str, Any]) -> str | None:
    """py-cpuinfo's model name: `brand_raw` (py-cpuinfo >= 7), `brand` before it."""
    return _opt_str(cpu.get("brand_raw")) or _opt_str(cpu.get("brand"))


def _opt_str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _opt_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
