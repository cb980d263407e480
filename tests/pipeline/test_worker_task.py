"""The validated spec travels to child processes as data: it dumps and validates back equal."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from perfkit.cli import build_parser
from perfkit.pipeline.spec import RunSpec, load_spec
from perfkit.pipeline.worker_task import ROLE_RANK, WorkerTask, read_task, write_task

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_an_example_spec_round_trips_equal_with_the_same_hash(path: Path) -> None:
    spec = load_spec(path)
    back = RunSpec.model_validate(json.loads(json.dumps(spec.model_dump(mode="json"))))
    assert back == spec and back.hash() == spec.hash() and back.to_dict() == spec.to_dict()
    assert [type(w) for w in back.workloads] == [type(w) for w in spec.workloads]


def test_a_custom_workload_keeps_its_yaml_positions_but_not_in_the_hash(tmp_path: Path) -> None:
    spec = load_spec(REPO / "examples" / "custom-swiglu.yaml")
    custom = spec.workloads[0]
    where = custom.where("entry")  # type: ignore[attr-defined]
    assert "custom-swiglu.yaml:" in where
    task = WorkerTask(role=ROLE_RANK, spec=spec, spec_path="custom-swiglu.yaml", run_dir=tmp_path, device="cpu")
    back = read_task(write_task(task)).spec
    assert back == spec and back.workloads[0].where("entry") == where  # type: ignore[attr-defined]
    assert "yaml_positions" not in json.dumps(spec.to_dict())  # the run record and hash never hold them


def test_yaml_positions_are_an_unknown_key_in_a_spec_file(tmp_path: Path) -> None:
    from perfkit.core.errors import SpecError

    path = tmp_path / "m.yaml"
    path.write_text("name: x\nworkloads:\n  - kind: custom\n    entry: m:f\n    yaml_positions: {entry: 'a:1:1'}\n")
    with pytest.raises(SpecError, match="unknown key 'yaml_positions'"):
        load_spec(path)


def test_profile_has_no_hidden_worker_flags(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    profile = sub.choices["profile"]
    flags = {s for a in profile._actions for s in a.option_strings}
    assert not flags & {"--rank-worker", "--ncu-pass", "--nsys-pass"}
    assert all(a.help != argparse.SUPPRESS for a in profile._actions)
    with pytest.raises(SystemExit):
        parser.parse_args(["profile", "--help"])
    assert "worker" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["profile", "m.yaml", "--rank-worker", "runs/x"])
    assert exc.value.code == 2
