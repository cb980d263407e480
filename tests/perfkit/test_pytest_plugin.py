"""The pytest plugin, used from a throwaway test project (pytester)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from perfkit.core.env import DeviceProperties
from perfkit.core.record import load_run

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
# Never imported by the plugin into a pytest run that does not use perfbench: heavy third-party
# packages and perfkit's generic top-level import names.
HEAVY = ("torch", "numpy", "pandas", "scipy", "pydantic", "rich", "sqlalchemy", "yaml",
         "profiler", "reports", "workloads", "dashboard", "analyzers", "roofline")

PROJECT_TEST = '''
import os
import time

DELAY_S = float(os.environ.get("PK_DELAY_S", "0"))
FAST = dict(warmup_s=0.0, budget_s=0.05, min_reps=10, target_rel_ci=0.5)


def work():
    if DELAY_S:
        time.sleep(DELAY_S)
    return sum(range(50))


def test_speed(perfbench):
    m = perfbench(work, label="work", cost=(50.0, 400.0), **FAST)
    assert m.stats.n >= 10
    perfbench(sorted, list(range(100)), **FAST)
    perfbench(sorted, list(range(100)), **FAST)  # same label twice: "sorted#2"


def test_fails_after_measuring(perfbench):
    perfbench(sum, [1, 2, 3], **FAST)
    assert False, "unrelated failure"
'''


def test_registered_through_the_pytest11_entry_point() -> None:
    eps = {e.name: e.value for e in entry_points(group="pytest11")}
    assert eps.get("perfkit") == "perfkit.pytest_plugin"


@pytest.fixture(autouse=True)
def gate_imported() -> None:
    """The gate's modules (scipy, sqlalchemy) imported in this process before an in-process
    pytester run loads them: pytester restores sys.modules after each run, and C extensions
    cannot be loaded twice in one process."""
    import perfkit.api
    import perfkit.comparison.baseline
    import perfkit.reports.gate.format  # noqa: F401


def heavy_in(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    code = ("import json, sys; import perfkit.pytest_plugin; "
            "print(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)
    modules = json.loads(proc.stdout)
    assert "perfkit.pytest_plugin" in modules
    assert heavy_in(modules) == []
    assert not any(m.startswith(("perfkit.api", "perfkit.pipeline", "perfkit.store"))
                   for m in modules)


def test_a_run_not_using_perfbench_loads_nothing_heavy(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # a perfkit option alone (no perfbench call) still imports nothing heavy; the modules are
    # listed after the whole session (terminal summary and session finish included)
    pytester.makeconftest('''
import json, sys
from pathlib import Path

def pytest_unconfigure(config):
    Path("modules.json").write_text(json.dumps(sorted(sys.modules)))
''')
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--perfkit-out", "out")
    result.assert_outcomes(passed=1)
    modules = json.loads((pytester.path / "modules.json").read_text())
    assert "perfkit.pytest_plugin" in modules  # the plugin was loaded ...
    assert heavy_in(modules) == []  # ... and brought nothing heavy
    assert not (pytester.path / "out").exists()  # no perfbench call: no run written


def test_options_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--perfkit-out=DIR*", "*--perfkit-baseline=RUN*"])


def single_run(out: Path) -> Path:
    (run_dir,) = list(out.iterdir())
    return run_dir


def test_perfkit_out_writes_a_run_the_store_can_read(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PK_DELAY_S", raising=False)
    pytester.makepyfile(test_perf=PROJECT_TEST)
    result = pytester.runpytest("--perfkit-out", "out", "--perfkit-name", "my-kernels")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*perfkit*", "*test_perf.py::test_speed [[]work[]]: median *",
                                 "perfkit: run written to *"])
    run_dir = single_run(pytester.path / "out")
    run = load_run(run_dir)
    assert run.status == "complete" and run.device == "cpu"
    assert run.spec["name"] == "my-kernels"
    assert run.env.device == DeviceProperties(type="cpu") and run.env.python and run.env.versions.torch
    keys = [p.key for p in run.points]
    assert keys == [
        "pytest/test_perf.py::test_speed/bench=work",
        "pytest/test_perf.py::test_speed/bench=sorted",
        "pytest/test_perf.py::test_speed/bench=sorted#2",
        "pytest/test_perf.py::test_fails_after_measuring/bench=sum",
    ]
    work = run.points[0]
    assert work.kind == "pytest" and work.workload == "test_perf.py::test_speed"
    assert work.status == "ok" and work.measurement is not None
    assert len(work.measurement.samples_s) >= 10
    assert work.cost is not None and work.achieved["flop_per_s"] > 0
    assert work.metrics["test_outcome"] == "passed"
    assert run.points[3].metrics["test_outcome"] == "failed"
    data = json.loads((run_dir / "run.json").read_text())
    assert data["schema_version"] == 2 and data["summary"]["ok"] == 4


def test_no_option_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf=PROJECT_TEST)
    result = pytester.runpytest("-k", "test_speed")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "out").exists()
    assert {p.name for p in pytester.path.iterdir()} <= {"test_perf.py", "__pycache__", ".pytest_cache"}


def test_baseline_catches_a_regression(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_perf=PROJECT_TEST)
    monkeypatch.delenv("PK_DELAY_S", raising=False)
    pytester.runpytest("-k", "test_speed", "--perfkit-out", "base").assert_outcomes(passed=1)
    baseline = single_run(pytester.path / "base")

    # the same code against its own baseline, with a 300% allowance: no regression, exit 0
    same = pytester.runpytest("-k", "test_speed", "--perfkit-baseline", str(baseline),
                              "--perfkit-max-slowdown", "3.0")
    same.assert_outcomes(passed=1)
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["*test_perf.py::test_speed bench=work: * -> * (medians), change *(test interval), p=*",
                               "perfkit gate against *: *(fails on regressed)*"])

    # work() now sleeps 2 ms: far slower -> the gate's verdict "regressed" fails the session
    monkeypatch.setenv("PK_DELAY_S", "0.002")
    slow = pytester.runpytest("-k", "test_speed", "--perfkit-baseline", str(baseline),
                              "--perfkit-out", "new")
    slow.assert_outcomes(passed=1)
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    slow.stdout.fnmatch_lines(["*test_perf.py::test_speed bench=work: regressed: * -> *2.* ms (medians), change +*",
                               "perfkit gate against *: fails: * regressed"])
    new = load_run(single_run(pytester.path / "new"))
    assert new.points[0].metrics["baseline"].startswith("test_perf.py::test_speed bench=work: regressed: ")
    assert new.points[0].metrics["test_outcome"] == "passed"


HEAVY_TAILED_TEST = '''
import time

CALLS = [0]


def work():
    """Mostly fast, every fifth call 20x slower: a heavy right tail."""
    CALLS[0] += 1
    time.sleep(0.002 if CALLS[0] % 5 == 0 else 0.0001)


def test_tail(perfbench):
    perfbench(work, label="work", warmup_s=0.0, budget_s=0.2, min_reps=40, target_rel_ci=0.01)
    perfbench(sorted, list(range(200)), warmup_s=0.0, budget_s=0.05, min_reps=20, target_rel_ci=0.5)
'''


@pytest.mark.slow
def test_plugin_verdicts_are_the_gates_on_the_same_runs(pytester: pytest.Pytester, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Heavy-tailed samples (where the old median-CI rule and the gate disagreed): the plugin's
    verdict of each measurement is the gate's on the same two runs, and the medians are the same text."""
    from perfkit.cli import main

    pytester.makepyfile(test_perf=HEAVY_TAILED_TEST)
    pytester.runpytest("--perfkit-out", "base").assert_outcomes(passed=1)
    base = single_run(pytester.path / "base")
    judged = pytester.runpytest("--perfkit-baseline", str(base), "--perfkit-out", "cand")
    cand = single_run(pytester.path / "cand")
    plugin = {p.key: p.metrics["baseline"] for p in load_run(cand).points}
    policy = tmp_path / "gate.yaml"
    policy.write_text("defaults:\n  min_effect: 0.10\n")
    capsys.readouterr()
    code = main(["gate", "--baseline", str(base), "--candidate", str(cand), "--history", "0", "--db",
                 str(tmp_path / "none.db"), "--policy", str(policy), "--format", "json", "--no-step-summary"])
    gate = json.loads(capsys.readouterr().out)
    assert {r["point"] for r in gate["rows"]} == set(plugin) and len(plugin) == 2
    for row in gate["rows"]:
        line = plugin[row["point"]]
        assert line.startswith(f"{row['label']}: {row['verdict']}: {row['baseline_text']} -> {row['candidate_text']} "
                               "(medians)"), (line, row)
    assert (code == 1) == (judged.ret == pytest.ExitCode.TESTS_FAILED) == gate["failed"]


def test_a_point_missing_from_the_baseline_is_not_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf=PROJECT_TEST)
    pytester.runpytest("-k", "test_fails", "--perfkit-out", "base")
    baseline = single_run(pytester.path / "base")
    result = pytester.runpytest("-k", "test_speed", "--perfkit-baseline", str(baseline))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*bench=work: not in the baseline; nothing to compare*"])


def test_bad_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf=PROJECT_TEST)
    result = pytester.runpytest("--perfkit-baseline", "missing-dir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perfkit-baseline: *missing-dir*no run record; not a perfkit run directory*"])


def test_runs_are_ingested_and_gated(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.cli import main

    pytester.makepyfile(test_perf=PROJECT_TEST)
    monkeypatch.delenv("PK_DELAY_S", raising=False)
    pytester.runpytest("-k", "test_speed", "--perfkit-out", "base").assert_outcomes(passed=1)
    monkeypatch.setenv("PK_DELAY_S", "0.002")
    pytester.runpytest("-k", "test_speed", "--perfkit-out", "cand").assert_outcomes(passed=1)
    base, cand = single_run(pytester.path / "base"), single_run(pytester.path / "cand")
    db = str(tmp_path / "perf.db")
    capsys.readouterr()
    assert main(["ingest", str(base), str(cand), "--db", db]) == 0
    assert capsys.readouterr().out.count(" metrics) stored") == 2
    code = main(["gate", "--baseline", str(base), "--candidate", str(cand), "--db", db,
                 "--metric", "*bench=work*", "--no-step-summary"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "regressed" in out and "test_perf.py::test_speed bench=work" in out  # the short point label
