"""The run record's fields are range-checked where a record is loaded, and a field that does not
fit is one line naming the field and its value (perfkit.core.bounded, perfkit.core.codec)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.core.codec import RecordError, from_builtins, shown_value, to_builtins
from perfkit.core.errors import StoreError
from perfkit.core.record import PointResult, load_run, run_from_dict
from tests.store.factory import make_run


def _record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(to_builtins(make_run("r1", [1e-3, 1.1e-3, 0.9e-3])), allow_nan=True))
    return data


def test_a_record_perfkit_writes_loads_back() -> None:
    run = make_run("r1", [1e-3, 1.1e-3, 0.9e-3])
    assert run_from_dict(_record()) == run


def _meas(**kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["points"][0]["measurement"].update(kw)


@pytest.mark.parametrize(("edit", "where", "problem"), [
    (_meas(calls_per_sample=math.inf), "points[0].measurement.calls_per_sample", "Infinity is not a whole number"),
    (_meas(calls_per_sample=0), "points[0].measurement.calls_per_sample", "0 is not a whole number >= 1"),
    (_meas(calls_per_sample=10**400), "points[0].measurement.calls_per_sample",
     "a number of about 401 digits is not a whole number below 2**63"),
    (_meas(warmup_reps=2.5), "points[0].measurement.warmup_reps", "2.5 is not a whole number"),
    (_meas(warmup_reps=True), "points[0].measurement.warmup_reps", "true is not a whole number"),
    (_meas(samples_s=[1e-3, math.nan]), "points[0].measurement.samples_s[1]", "NaN is not a finite number >= 0"),
    (_meas(samples_s=[-math.inf]), "points[0].measurement.samples_s[0]", "-Infinity is not a finite number >= 0"),
    (_meas(target_rel_ci=math.inf), "points[0].measurement.target_rel_ci", "Infinity is not a finite number"),
    (lambda d: d["points"][0]["cost"].update(bytes=-1), "points[0].cost.bytes", "-1 is not a finite number >= 0"),
    (lambda d: d["points"][0].update(status="fine"), "points[0].status", '"fine" is not one of ok, failed, skipped'),
    (lambda d: d.update(status="done"), "status", '"done" is not one of complete, interrupted, running'),
    (lambda d: d.update(run_id=""), "run_id", '"" is not a run id'),
    (lambda d: d.update(run_id="a/b"), "run_id", '"a/b" is not a run id'),
    (lambda d: d.update(run_id=".."), "run_id", '".." is not a run id'),
    (lambda d: d["env"]["gpus"][0]["clocks"].update(max_sm_mhz=-1980), "env.gpus[0].clocks.max_sm_mhz",
     "-1980 is not a whole number >= 0"),
    (lambda d: d["env"]["gpus"][0].update(power_w=math.nan), "env.gpus[0].power_w", "NaN is not a finite number"),
    (lambda d: d.update(points={"a": 1}), "points", "an object is not a list"),
    (lambda d: d["points"].__setitem__(0, "p"), "points[0]", '"p" is not an object'),
    (lambda d: d["points"][0].pop("key"), "points[0]", "object missing required field `key`"),
    (lambda d: d.update(schema_version="2"), "schema_version", '"2" is not a whole number'),
    (lambda d: d["artifacts"].update(launches=-3), "artifacts.launches", "-3 is not a whole number >= 0"),
])
def test_a_field_that_does_not_fit_is_named_with_its_value(edit: Callable[[dict[str, Any]], object], where: str,
                                                           problem: str) -> None:
    data = _record()
    data.setdefault("artifacts", {})
    edit(data)
    with pytest.raises(RecordError) as err:
        run_from_dict(data)
    assert err.value.where == where and err.value.problem.startswith(problem), err.value
    assert str(err.value) == f"{where}: {err.value.problem}" and "\n" not in str(err.value)


def test_load_run_says_the_file_and_what_to_do(tmp_path: Path) -> None:
    data = _record()
    data["points"][0]["measurement"]["calls_per_sample"] = math.inf
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(StoreError) as err:
        load_run(tmp_path)
    assert str(err.value) == (f"{tmp_path / 'run.json'}: points[0].measurement.calls_per_sample: Infinity is not a "
                              "whole number; re-run the point or fix the record")
    data = _record()
    data["created"] = 5
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"run\.json: created: 5 is not a string; fix the record or re-run the profile$"):
        load_run(tmp_path)


def test_numerics_may_be_undefined() -> None:
    """A failed numerics check keeps NaN / inf errors: they are what it found, not damage."""
    point = to_builtins(make_run("r1", [1e-3]).points[0])
    point["numerics"] = {"reference": "fp64", "rel_err": math.nan, "max_abs_err": math.inf, "tol": 1e-4, "ok": False}
    assert math.isnan(from_builtins(PointResult, point).numerics.rel_err)  # type: ignore[union-attr]


@pytest.mark.parametrize(("value", "shown"), [
    (math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN"), ("x", '"x"'), (None, "null"),
    (True, "true"), ([1], "a list"), ({}, "an object"), (10**40, "a number of about 41 digits"),
    ("y" * 100, '"' + "y" * 56 + "..."),
])
def test_values_are_shown_as_json_writes_them(value: Any, shown: str) -> None:
    assert shown_value(value) == shown
