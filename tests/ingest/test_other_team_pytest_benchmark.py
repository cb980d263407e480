"""pytest-benchmark files written by other projects (tests/data/pytest_benchmark): 2.5.0 autosaves
from the tool's own repository and 3.2.2 outputs that github-action-benchmark keeps (shortened
by hand upstream), each checked against a plain-json reading."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from perfkit.core.errors import StoreError
from perfkit.ingest.pytest_benchmark import parse_pytest_benchmark
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "pytest_benchmark"
OLD = sorted((DATA / "pytest_benchmark_repo").glob("storage_*.json"))
SHORTENED = sorted((DATA / "github_action_benchmark").glob("*.json"))


def plain(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.name)
def test_a_2015_autosave_is_one_run_of_medians(path: Path) -> None:
    raw = plain(path)
    (run,) = parse_pytest_benchmark(path)
    assert [m.name for m in run.metrics] == [f"{b['fullname']}:time_s" for b in raw["benchmarks"]]
    assert [m.samples for m in run.metrics] == [(b["stats"]["median"],) for b in raw["benchmarks"]]
    assert run.commit == raw["commit_info"]["id"] and run.dirty is True and run.branch is None
    assert run.gpu == raw["machine_info"]["processor"] == "x86_64"  # no cpu model in 2.5.0
    assert run.created.startswith(raw["datetime"][:19])


@pytest.mark.parametrize("path", SHORTENED, ids=lambda p: p.name)
def test_a_hand_shortened_data_list_is_refused_naming_the_item(path: Path) -> None:
    with pytest.raises(StoreError, match=r"benchmarks\[0\] \(bench\.py::test_fib_\d+\): stats\.data\[4\] is "
                                         r"\"\.\.\. omitted to keep this file small\", not a number"):
        parse_pytest_benchmark(path)


@pytest.mark.parametrize("path", SHORTENED, ids=lambda p: p.name)
def test_without_the_shortened_lists_the_old_cpu_key_names_the_run(path: Path, tmp_path: Path) -> None:
    raw = plain(path)
    for bench in raw["benchmarks"]:  # keep only the lists upstream left whole
        if not all(isinstance(v, float) for v in bench["stats"]["data"]):
            del bench["stats"]["data"]
    copy = tmp_path / path.name
    copy.write_text(json.dumps(raw))
    (run,) = parse_pytest_benchmark(copy)
    assert run.gpu == raw["machine_info"]["cpu"]["brand"]  # py-cpuinfo < 7: no brand_raw
    assert run.env.cpu.model == raw["machine_info"]["cpu"]["brand"]
    assert run.branch == raw["commit_info"]["branch"] and run.created.startswith(raw["datetime"][:19])
    expected = [tuple(b["stats"].get("data", [b["stats"]["median"]])) for b in raw["benchmarks"]]
    assert [m.samples for m in run.metrics] == expected


@pytest.mark.slow
def test_cli_ingest_exits_0_and_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    db = f"sqlite:///{tmp_path / 's.db'}"
    ok = run_perfkit(["ingest", "--format", "pytest-benchmark", *map(str, OLD), "--db", db], Path.cwd(), env)
    assert ok.returncode == 0 and ok.stdout.count(" stored") == 2, ok.stderr
    bad = run_perfkit(["ingest", "--format", "pytest-benchmark", str(SHORTENED[0]), "--db", db], Path.cwd(), env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
