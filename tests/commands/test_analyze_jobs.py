"""`perfkit analyze --jobs / --executor`: the same tables from worker processes; bad options are
one line, exit 2, before any file is read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.helpers.forked_cli import Result, run_perfkit

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "data" / "traces" / "tracelens" / "vllm_prefilldecode_piecewise.json.gz"


def _analyze(*args: str) -> Result:
    """`python -m perfkit analyze ARGS` (a process forked from the test process's fork server)."""
    return run_perfkit(["analyze", *args], ROOT)


@pytest.mark.slow
def test_two_workers_print_what_one_process_prints(tmp_path: Path) -> None:
    with gzip.open(SOURCE, "rt") as f:
        trace = json.load(f)
    files = []
    for rank in range(3):
        trace["distributedInfo"] = {"rank": rank, "world_size": 3}
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(trace))
        files.append(str(path))
    one = _analyze(*files, "--format", "json", "--only", "kernels,skew")
    two = _analyze(*files, "--format", "json", "--only", "kernels,skew", "--jobs", "2")
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert len(json.loads(one.stdout)["kernels"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize(("option", "says"), [(("--jobs", "0"), "--jobs 0: give 1 or more"),
                                              (("--executor", "ray://head:1"), "--executor 'ray://head:1': give local")])
def test_bad_options_are_one_line(option: tuple[str, str], says: str) -> None:
    done = _analyze(str(SOURCE), *option)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
