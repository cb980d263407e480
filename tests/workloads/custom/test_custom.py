"""Custom workloads end to end: a test package of factories run by `perfkit profile` on the CPU.

Each test writes a uniquely named package into its tmp dir, runs there (modules are imported
from the working directory), and reads the run record back.
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.record import Run, load_run

OPS = '''
import torch


def scale_case(m, n, device, factor=2.0):
    x = torch.randn(m, n, device=device)
    return (lambda x: x * factor), (x,)


def scale_ref(x):
    return x.double() * 2.0


def tuple_case(m, device):
    x = torch.randn(m, device=device)
    return (lambda x, shift=0.0: (x + shift, x * 2)), (x,), {"shift": 1.0}


def tuple_ref(x, shift=0.0):
    return (x.double() + shift, x.double() * 2)


def raising_case(m, n, device):
    if m > 4:
        raise ValueError(f"m={m} is too big for this kernel")
    x = torch.randn(m, n, device=device)
    return lambda: x.sum()


def bare_case(m, device):
    x = torch.randn(m, device=device)
    return lambda: x * 2


def none_case(m, device):
    x = torch.randn(m, device=device)
    return (lambda x: None), (x,)


def needs_k(m, k, device):
    return lambda: m * k


def not_a_case(m):
    return 42


def cost(m, n=1):
    return {"flop": 3.0 * m * n, "bytes": 8.0 * m * n}


def exiting_case(m):
    import sys
    sys.exit(3)


def exit_in_kernel(m):
    def kernel():
        raise SystemExit("bye")
    return kernel
'''

TIMING = """\
timing: {warmup_s: 0.0, budget_s: 0.02, min_reps: 3, target_rel_ci: 0.5}
profile: {torch_profiler: false, nvtx: false}
"""


@pytest.fixture(autouse=True)
def _clean_triton_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # the runner sets TRITON_INTERPRET=1 on a CPU run and puts the working directory on
    # sys.path: restore both afterwards
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh package `pk_<hex>` with module `ops` in tmp_path, the working directory."""
    name = f"pk_{uuid.uuid4().hex[:10]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "ops.py").write_text(OPS)
    monkeypatch.chdir(tmp_path)
    return name


def profile(tmp_path: Path, workloads: str, extra: str = "") -> tuple[int, Run, Path]:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: custom-test\ndevice: cpu\n" + TIMING + extra + "workloads:\n" + textwrap.dedent(workloads))
    out = tmp_path / "runs"
    code = main(["profile", str(spec), "--out", str(out), "--quiet"])
    (run_dir,) = list(out.iterdir())
    return code, load_run(run_dir), run_dir


def by_key(run: Run) -> dict[str, Any]:
    return {p.key: p for p in run.points}


@pytest.mark.slow
def test_factory_reference_and_expression_cost(tmp_path: Path, pkg: str) -> None:
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        name: scale
        entry: {pkg}.ops:scale_case
        reference: {pkg}.ops:scale_ref
        params: {{m: [2, 8], n: 16}}
        cost: {{flop: m*n, bytes: 2 * 4*m*n}}
    """)
    assert code == 0
    assert [p.key for p in run.points] == ["custom/scale/m=2,n=16", "custom/scale/m=8,n=16"]
    for p in run.points:
        m = p.params["m"]
        assert p.status == "ok", p.error
        assert p.cost is not None and (p.cost.flop, p.cost.bytes) == (m * 16, 8 * m * 16)
        assert p.numerics is not None and p.numerics.ok and p.numerics.rel_err < 1e-6
        assert p.numerics.reference == f"reference {pkg}.ops:scale_ref"
        assert p.numerics.tol == 1e-4  # no dtype parameter: the default tolerance
        assert p.measurement is not None and len(p.measurement.samples_s) >= 3


def test_cost_function_beside_the_factory_and_tuple_outputs(tmp_path: Path, pkg: str) -> None:
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        entry: {pkg}.ops:tuple_case
        reference: {pkg}.ops:tuple_ref
        params: {{m: 32, dtype: bf16}}
    """)
    assert code == 0
    (p,) = run.points
    assert p.status == "ok", p.error
    assert p.cost is not None and (p.cost.flop, p.cost.bytes) == (96.0, 256.0)  # cost(m) in ops.py
    assert p.numerics is not None and p.numerics.ok
    assert p.numerics.tol == 1e-2  # REL_TOL of the dtype parameter


@pytest.mark.slow
def test_reference_mismatch_fails_the_point(tmp_path: Path, pkg: str) -> None:
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        entry: {pkg}.ops:scale_case
        reference: {pkg}.ops:scale_ref
        tolerance: 1e-3
        params: {{m: 4, n: 4, factor: [2.0, 2.5]}}
        cost: {{flop: m*n, bytes: 4*m*n}}
    """)
    assert code == 3
    good, bad = run.points
    assert good.status == "ok" and good.numerics is not None and good.numerics.ok
    assert bad.status == "failed"
    assert bad.numerics is not None and not bad.numerics.ok
    assert bad.numerics.rel_err == pytest.approx(0.25, rel=1e-6)  # 2.5x vs 2x
    assert bad.error is not None and "relative error 0.25 > tolerance 0.001" in bad.error


def spec_line(tmp_path: Path, key: str, occurrence: int = 1) -> str:
    """`FILE:LINE:COL` of the n-th `key:` in spec.yaml."""
    path = tmp_path / "spec.yaml"
    seen = 0
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(f"{key}:"):
            seen += 1
            if seen == occurrence:
                return f"{path}:{i}:{len(line) - len(stripped) + 1}"
    raise AssertionError(f"no {key}")


@pytest.mark.slow
def test_failing_factories_give_located_errors_and_the_sweep_goes_on(tmp_path: Path, pkg: str) -> None:
    code, run, run_dir = profile(tmp_path, f"""\
      - kind: custom
        name: missing-module
        entry: {pkg}.nope:make
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: missing-function
        entry: {pkg}.ops:no_such_factory
        cost: {{flop: 1, bytes: 1}}
      - kind: custom
        name: raising
        entry: {pkg}.ops:raising_case
        params: {{m: [2, 8], n: 4}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: bare-with-reference
        entry: {pkg}.ops:bare_case
        reference: {pkg}.ops:scale_ref
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: returns-none
        entry: {pkg}.ops:none_case
        reference: {pkg}.ops:scale_ref
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: missing-argument
        entry: {pkg}.ops:needs_k
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: returns-int
        entry: {pkg}.ops:not_a_case
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: no-cost
        entry: {pkg}.nocost:make
        params: {{m: 2}}
      - kind: custom
        name: cost-div-zero
        entry: {pkg}.ops:bare_case
        params: {{m: [0, 2]}}
        cost: {{flop: 1 / m, bytes: m}}
    """)
    assert code == 3
    pts = {p.key: p for p in run.points}
    assert len(pts) == 11
    entry = [spec_line(tmp_path, "entry", i) for i in range(1, 10)]
    ref = [spec_line(tmp_path, "reference", i) for i in range(1, 3)]

    def err(key: str) -> str:
        p = pts[key]
        assert p.status == "failed", key
        assert p.error is not None and "\n" not in p.error
        return str(p.error)

    e = err("custom/missing-module/m=2")
    assert e.startswith(f"{entry[0]}: entry '{pkg}.nope:make' failed to import: "
                        f"ModuleNotFoundError: No module named '{pkg}.nope'; check the module path")
    assert f"module '{pkg}.ops' has no attribute 'no_such_factory'; check the function name" in err(
        "custom/missing-function/")
    assert err("custom/missing-function/").startswith(f"{entry[1]}: ")
    # the raising factory fails only where it raises: the sweep goes on
    assert pts["custom/raising/m=2,n=4"].status == "ok"
    e = err("custom/raising/m=8,n=4")
    assert f"{entry[2]}: entry '{pkg}.ops:raising_case' raised ValueError: m=8 is too big" in e
    assert "(called with m=8, n=4, device=cpu)" in e
    assert f"{entry[3]}: entry '{pkg}.ops:bare_case' returned a bare callable" in err(
        "custom/bare-with-reference/m=2")
    assert f"{ref[1]}: the kernel returned None" in err("custom/returns-none/m=2")
    assert "needs argument 'k', which the sweep does not define" in err("custom/missing-argument/m=2")
    assert "returned int; return the callable to time" in err("custom/returns-int/m=2")
    e = err("custom/no-cost/m=2")
    assert f"{entry[7]}: entry '{pkg}.nocost:make' failed to import" in e  # no module at all
    e = err("custom/cost-div-zero/m=0")
    assert f"{spec_line(tmp_path, 'cost', 8)}: cost flop: '1 / m': division by zero with m=0" in e
    assert pts["custom/cost-div-zero/m=2"].status == "ok"
    # the record on disk says the same
    data = json.loads((run_dir / "run.json").read_text())
    assert data["summary"] == {"ok": 2, "failed": 9, "skipped": 0}


def test_module_without_cost_is_a_located_error(tmp_path: Path, pkg: str) -> None:
    (tmp_path / pkg / "plain.py").write_text("def make(device):\n    return lambda: 1\n")
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        name: plain
        entry: {pkg}.plain:make
    """)
    assert code == 3
    (p,) = run.points
    assert p.error is not None
    assert f"{spec_line(tmp_path, 'entry')}: workload 'plain' has no cost; add cost:" in p.error
    assert f"or define cost(**params) in module '{pkg}.plain'" in p.error


def test_reference_that_raises_is_located(tmp_path: Path, pkg: str) -> None:
    (tmp_path / pkg / "badref.py").write_text(
        "import torch\n"
        "def make(device):\n    x = torch.ones(3)\n    return (lambda x: x), (x,)\n"
        "def ref(x):\n    raise RuntimeError('reference exploded')\n"
        "def cost():\n    return (1, 2)\n"
    )
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        entry: {pkg}.badref:make
        reference: {pkg}.badref:ref
    """)
    assert code == 3
    (p,) = run.points
    assert p.error is not None
    assert p.error.startswith(f"{spec_line(tmp_path, 'reference')}: "
                              f"reference '{pkg}.badref:ref' raised RuntimeError: reference exploded")
    assert p.cost is not None and (p.cost.flop, p.cost.bytes) == (1.0, 2.0)


def test_a_non_triton_cpu_run_times_normally_and_sets_the_interpreter(tmp_path: Path, pkg: str) -> None:
    import os

    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        entry: {pkg}.ops:bare_case
        params: {{m: 4}}
        cost: {{flop: m, bytes: m}}
    """)
    assert code == 0
    (p,) = run.points
    assert "timing_skipped" not in p.metrics
    assert p.measurement is not None and p.measurement.timer == "perf_counter"
    assert os.environ.get("TRITON_INTERPRET") == "1"  # set for the run's CPU device (restored by the fixture)


@pytest.mark.slow
def test_user_code_calling_sys_exit_fails_only_its_point(tmp_path: Path, pkg: str) -> None:
    code, run, _ = profile(tmp_path, f"""\
      - kind: custom
        name: exits-in-factory
        entry: {pkg}.ops:exiting_case
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: exits-in-kernel
        entry: {pkg}.ops:exit_in_kernel
        params: {{m: 2}}
        cost: {{flop: m, bytes: m}}
      - kind: custom
        name: fine
        entry: {pkg}.ops:raising_case
        params: {{m: 2, n: 4}}
        cost: {{flop: m, bytes: m}}
    """)
    assert code == 3  # some points failed; the sweep went on and the run was written
    pts = by_key(run)
    assert run.status == "complete" and len(pts) == 3
    assert pts["custom/fine/m=2,n=4"].status == "ok"
    for key in ("custom/exits-in-factory/m=2", "custom/exits-in-kernel/m=2"):
        assert pts[key].status == "failed" and "SystemExit" in str(pts[key].error), pts[key].error
