"""The typed environment and schema 2 of the run record: an old (schema-1) run.json written by
perfkit before the change loads, keeps its JSON shape, is stored, and is compared with a
new-format run; the ingesters' old env shapes migrate; malformed records fail in one line."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from perfkit.cli import main
from perfkit.core.codec import from_builtins, to_builtins
from perfkit.core.env import (
    CpuState,
    DeviceProperties,
    Env,
    GitState,
    GpuClocks,
    GpuState,
    Source,
    Versions,
)
from perfkit.core.errors import StoreError
from perfkit.core.measurement import Measurement
from perfkit.core.migrate import SCHEMA_VERSION, env_v1_to_v2, load_env
from perfkit.core.record import Run, load_run, run_from_dict
from perfkit.store.api import load_stored_run, store_run

OLD_RUN = Path(__file__).parent / "data" / "run-v1"  # `perfkit profile examples/gemm-cpu.yaml --quick`, trimmed

H100_AFTER = GpuState(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0f1e", driver="550.54.15",
                      clocks=GpuClocks(sm_mhz=1980, mem_mhz=2619, max_sm_mhz=1980, max_mem_mhz=2619,
                                       app_sm_mhz=1755, app_mem_mhz=2619),
                      power_w=612.5, power_limit_w=700.0, temperature_c=71.0,
                      throttle_reasons=("sw_power_cap",), memory_total_bytes=85_520_809_984, pstate=0)
GPU_ENV = Env(
    host="gpu-box", os="Linux-6.8", python="3.11.9",
    git=GitState(repo="/src/llm", commit="c0ffee", branch="main", dirty=False),
    cpu=CpuState(model="AMD EPYC 9454 48-Core Processor", cores=96, threads=48),
    gpu_available=True,
    gpus=(replace(H100_AFTER, clocks=replace(H100_AFTER.clocks, sm_mhz=345), power_w=71.2, throttle_reasons=()),),
    gpus_after=(H100_AFTER,),
    versions=Versions(torch="2.5.1", cuda="12.4", cudnn=90100, cuda_available=True),
    device=DeviceProperties(type="cuda", name="NVIDIA H100 80GB HBM3", capability="9.0", sm_count=132,
                            memory_bytes=85_045_395_456, l2_bytes=52_428_800),
    roofline={"device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3"}, "calibration": None, "flags": []},
    quick=False,
)


def _old_json() -> dict[str, Any]:
    return json.loads((OLD_RUN / "run.json").read_text())


def test_old_run_loads_typed() -> None:
    assert _old_json()["schema_version"] == 1 and "cpu_model" in _old_json()["env"]
    run = load_run(OLD_RUN)
    assert run.schema_version == SCHEMA_VERSION == 2
    env = run.env
    assert env.cpu == CpuState(model="AMD EPYC", cores=2, threads=1)  # cpu_model, cpu_cores, versions.num_threads
    assert env.versions.torch == "2.13.0+cpu" and env.versions.cuda_available is False
    assert env.git.commit == run.commit == "62ef551a121d78db7adf6f919e3eac234d354316"
    assert env.gpus == () and env.gpus_after == () and env.gpu_available is False and env.gpu_reason
    assert env.device == DeviceProperties(type="cpu") and env.quick is True and env.source is None
    assert env.roofline is not None and env.roofline["device"]["name"] == "AMD EPYC"
    assert env.label == "AMD EPYC" and env.extra == {}
    assert [p.status for p in run.points] == ["ok", "ok", "skipped", "ok"]
    assert run.points[0].measurement is not None and len(run.points[0].measurement.samples_s) == 12


def test_old_run_keeps_its_json_shape_but_the_env() -> None:
    old = _old_json()
    new = to_builtins(load_run(OLD_RUN))
    assert list(new) == list(old)  # same keys, same order, derived "summary" included
    for key in old:
        if key not in ("env", "schema_version"):
            assert json.dumps(new[key]) == json.dumps(old[key]), key  # stats, achieved: bit for bit
    assert new["schema_version"] == 2
    assert new["env"]["cpu"] == {"model": "AMD EPYC", "cores": 2, "threads": 1}
    assert "num_threads" not in new["env"]["versions"] and "cpu_model" not in new["env"]


def test_typed_env_round_trips_through_json(tmp_path: Path) -> None:
    run = replace(load_run(OLD_RUN), env=GPU_ENV, device="cuda")
    (tmp_path / "run.json").write_text(json.dumps(to_builtins(run)))
    back = load_run(tmp_path)
    assert back == run
    assert back.env.gpus_after is not None and back.env.gpus_after[0].clocks.app_sm_mhz == 1755
    assert back.env.throttled == ()  # the GPU before the run; the power cap after it is in gpus_after
    assert back.env.clock_policy == {"max_sm_mhz": 1980, "max_mem_mhz": 2619, "app_sm_mhz": 1755,
                                     "app_mem_mhz": 2619}


def test_old_run_is_stored_and_compared_with_a_new_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 'perfkit.db'}"
    monkeypatch.setenv("PERFKIT_DB", db)
    old_dir = tmp_path / "old"
    shutil.copytree(OLD_RUN, old_dir)
    old = load_run(old_dir)
    assert store_run(old_dir, db) == old.run_id
    stored = load_stored_run(old.run_id, db)
    assert stored.env == old.env and stored.points == old.points and stored.schema_version == 2

    # a new-format run (schema 2, written by this perfkit) of the same points, the first 3x slower
    first = old.points[0]
    assert first.measurement is not None
    slow = replace(first, measurement=replace(first.measurement,
                                              samples_s=tuple(s * 3.0 for s in first.measurement.samples_s)))
    new = replace(old, run_id="new-run", created="2026-11-27T00:00:00+00:00",
                  env=replace(old.env, git=replace(old.env.git, commit="bad0001")),
                  points=(slow, *old.points[1:]))
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    (new_dir / "run.json").write_text(json.dumps(to_builtins(new)))
    assert json.loads((new_dir / "run.json").read_text())["schema_version"] == 2

    for baseline in (str(old_dir), old.run_id):  # the run directory, and the stored row
        code = main(["gate", "--baseline", baseline, "--candidate", str(new_dir), "--format", "json"])
        out = json.loads(capsys.readouterr().out)
        verdicts = {m["metric"]: m["verdict"] for m in out["metrics"]}
        assert code == 1, out
        assert verdicts[f"{first.key}:time_s"] == "regressed"
        assert "incomparable" not in verdicts.values()  # same CPU, same env fields: comparable


def test_ingester_env_shapes_of_schema_1_migrate() -> None:
    csv_env = {"gpus": [{"name": "H100"}], "git": {"commit": "a1", "branch": "main"}, "source": {"csv": "r.csv"}}
    assert load_env(csv_env, 1) == Env(gpus=(GpuState(name="H100"),), git=GitState(commit="a1", branch="main"),
                                       source=Source(format="csv", path="r.csv"))
    pb_env = {"gpus": [], "cpu": {"model": "Xeon"}, "git": {"commit": "c1", "branch": None, "dirty": False},
              "host": {"hostname": "vm"}, "python": "3.11.7",
              "source": {"pytest-benchmark": "b.json", "version": "5.3.1"}}
    assert load_env(pb_env, 1) == Env(host="vm", python="3.11.7", cpu=CpuState(model="Xeon"),
                                      git=GitState(commit="c1", dirty=False),
                                      source=Source(format="pytest-benchmark", path="b.json", version="5.3.1"))
    # keys schema 2 has no field for are kept, not dropped
    assert env_v1_to_v2({"torch": "2.13.0", "demo": {"commit_index": 1}})["extra"] == {
        "torch": "2.13.0", "demo": {"commit_index": 1}}
    assert load_env({}, 1) == Env() == load_env({}, 2)


@pytest.mark.parametrize(("edit", "where"), [
    (lambda d: d["points"][0]["measurement"].update(warmup_reps="many"),
     'points[0].measurement.warmup_reps: "many" is not a whole number; re-run the point'),
    (lambda d: d["env"].update(gpus="none"), 'env.gpus: "none" is not a list; fix the record'),
    (lambda d: d.update(env="cpu"), 'env: "cpu" is not an object; fix the record'),
])
def test_malformed_record_is_one_located_line(tmp_path: Path, edit: Any, where: str) -> None:
    data = _old_json()
    edit(data)
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(StoreError) as err:
        load_run(tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'run.json'}: {where}")


def test_schema_1_env_of_the_wrong_type_is_refused() -> None:
    data = {**_old_json(), "env": {"cpu_cores": "two"}}
    with pytest.raises(ValueError, match=r"^env\.cpu\.cores: \"two\" is not a whole number or null$"):
        run_from_dict(data)


def test_codec_layout_names_every_field() -> None:
    @dataclass(frozen=True)
    class Forgetful:
        a: int
        b: int
        JSON_KEYS: ClassVar[tuple[str, ...]] = ("a",)

    with pytest.raises(TypeError, match=r"lacks the fields \['b'\]"):
        to_builtins(Forgetful(1, 2))
    m = Measurement((1e-3,), 1, "budget", "perf_counter", 0.01, extra={"device": "cpu"})
    assert to_builtins(m)["extra"] == {"device": "cpu"} and from_builtins(Measurement, to_builtins(m)) == m
    assert to_builtins(Run) is Run  # a class is not a record


def test_profiler_env_is_typed(tmp_path: Path) -> None:
    from perfkit.profiler.env import capture_env, sample_gpus

    env = capture_env(tmp_path)  # not a git repository: git fields unknown, nothing raises
    assert isinstance(env, Env) and env.git == GitState(repo=str(tmp_path))
    assert env.cpu.cores and env.cpu.threads and env.versions.torch
    assert env.gpu_available or (env.gpu_reason and env.gpus == ())  # no GPU: says why
    assert sample_gpus().available == env.gpu_available
    assert from_builtins(Env, json.loads(json.dumps(to_builtins(env)))) == env
