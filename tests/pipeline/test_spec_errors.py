"""Bad model.yaml files: one located line each (FILE:LINE:COL: what; what to do), exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfkit.core.errors import SpecError
from perfkit.pipeline.spec import load_spec
from tests.helpers.forked_cli import run_perfkit

GOOD = """\
name: t
workloads:
  - kind: gemm
    m: 64
    n: 64
    k: 64
"""

# (yaml text, expected line:col, regex the message must match)
BAD_SPECS = [
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 64\n    n: 64\n    k: 64\n    dtype: [bf16]\n",
     "7:5", r"unknown key 'dtype'; did you mean 'dtypes'\?"),
    ("name: t\ntimng: {budget_s: 1}\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n",
     "2:1", r"unknown key 'timng'; did you mean 'timing'\?"),
    ("name: t\nworkloads:\n  - kind: gem\n    m: 1\n    n: 1\n    k: 1\n",
     "3:11", r"unknown workload kind 'gem'; did you mean 'gemm'\?"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: abc\n    n: 1\n    k: 1\n",
     "4:8", r"'m': expected integers, got 'abc'"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: []\n    n: 1\n    k: 1\n",
     "4:8", r"empty sweep; give at least one value"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: {start: 512, stop: 256, step: 64}\n    n: 1\n    k: 1\n",
     "4:8", r"is empty; make stop >= start"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: -4\n    n: 1\n    k: 1\n",
     "4:8", r"below the minimum 1"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 4\n    n: 1\n",
     "3:5", r"missing required key 'k'; add it"),
    ("name: t\ntiming:\n  budget_s: -1\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n",
     "3:13", r"'budget_s' is -1; it must be > 0"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    dtypes: [fp4]\n",
     "7:13", r"unknown dtype 'fp4'; use one of"),
    ("name: t\ndevice: tpu\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n",
     "2:9", r"'device' is 'tpu'; expected 'auto', 'cuda' or 'cpu'"),
    ("name: t\nworkloads: []\n", "2:12", r"'workloads' is empty; add at least one workload"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    transpose_b: maybe\n",
     "7:18", r"expected true/false, got 'maybe'"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: [1, 2\n    n: 1\n",
     r"\d+:\d+", r"YAML syntax error"),
    ("- just\n- a list\n", "1:1", r"the spec must be a mapping"),
    ("name: t\nprofile:\n  nvtx: 3\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n",
     "3:9", r"'nvtx' must be true or false, got 3"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: {start: 1, stop: 8}\n    n: 1\n    k: 1\n",
     "4:8", r"exactly one of step or mul"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n  - kind: gemm\n    m: 2\n    n: 2\n    k: 2\n",
     "7:11", r"workload name 'gemm' is used twice.*distinct 'name'"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    timing: {min_rep: 3}\n",
     "7:14", r"unknown key 'min_rep'; did you mean 'min_reps'\?"),
    ("workloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n",
     "1:1", r"missing required key 'name'; add it"),
    # repeated sweep values would give two points one key (the store refuses the second)
    ("name: t\nworkloads:\n  - kind: gemm\n    m: [8, 8]\n    n: 1\n    k: 1\n",
     "4:8", r"value 8 is listed twice"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    dtypes: [bf16, bf16]\n",
     "7:13", r"listed twice"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    transpose_b: [true, true]\n",
     "7:18", r"value True is listed twice"),
    # a mapping or a list among a sweep's values is named, never a traceback (unhashable before)
    ("name: t\nworkloads:\n  - kind: gemm\n    m: [1, {x: 1}]\n    n: 1\n    k: 1\n",
     "4:8", r"expected integers, got \{'x': 1\}"),
    ("name: t\nworkloads:\n  - kind: gemm\n    m: 1\n    n: 1\n    k: 1\n    dtypes: [fp32, [bf16]]\n",
     "7:13", r"\['bf16'\]"),
    # a huge range is sized arithmetically, never listed (this used GBs before)
    ("name: t\nworkloads:\n  - kind: gemm\n    m: {start: 1, stop: 1000000000000, step: 1}\n    n: 1\n    k: 1\n",
     "4:8", r"range has 1000000000000 values \(limit 10000\)"),
]


@pytest.mark.parametrize(("text", "where", "pattern"), BAD_SPECS)
def test_bad_spec_message(tmp_path: Path, text: str, where: str, pattern: str) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message
    assert re.match(rf"^{re.escape(str(path))}:{where}: ", message), message
    assert re.search(pattern, message), message
    assert ";" in message or "?" in message  # always says what to do


def test_good_spec_parses(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(GOOD)
    spec = load_spec(path)
    points = spec.points()
    assert len(points) == 1
    assert points[0].key == "gemm/gemm/m=64,n=64,k=64,batch=1,dtype=fp32,transpose_a=False,transpose_b=False"
    assert spec.timing.flush_l2 is True


def test_missing_file() -> None:
    with pytest.raises(SpecError, match="file not found"):
        load_spec("/nonexistent/model.yaml")


def test_cli_bad_spec_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(BAD_SPECS[0][0])
    out = tmp_path / "runs"
    proc = run_perfkit(["profile", str(path), "--out", str(out)], Path.cwd())
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "did you mean 'dtypes'" in lines[0]
    assert not out.exists()
