"""perfkit.bench and the perfbench fixture pin torch's threads (1 on a CPU), record them, restore them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from perfkit.api import bench
from perfkit.core.record import load_run

pytest_plugins = ["pytester"]

FAST = {"warmup_s": 0.0, "budget_s": 0.02, "min_reps": 5, "target_rel_ci": 0.5}


@pytest.fixture
def two_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def seen_threads() -> tuple[set[int], object]:
    seen: set[int] = set()

    def fn() -> None:
        seen.add(torch.get_num_threads())

    return seen, fn


def test_cpu_default_is_one_thread_and_the_callers_count_comes_back(two_threads: None) -> None:
    seen, fn = seen_threads()
    m = bench(fn, **FAST)  # type: ignore[arg-type]
    assert seen == {1}
    assert m.extra["threads"] == 1
    assert torch.get_num_threads() == 2


def test_threads_argument_overrides(two_threads: None) -> None:
    torch.set_num_threads(1)
    seen, fn = seen_threads()
    m = bench(fn, threads=2, **FAST)  # type: ignore[arg-type]
    assert seen == {2} and m.extra["threads"] == 2
    assert torch.get_num_threads() == 1


def test_threads_restored_when_the_callable_raises(two_threads: None) -> None:
    def boom() -> None:
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        bench(boom, **FAST)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, 2000, 1.5, True, "2"])
def test_bad_threads(bad: object) -> None:
    with pytest.raises(ValueError, match=r"threads is .*; it must be an int from 1 to 1024"):
        bench(sum, [1], threads=bad, **FAST)  # type: ignore[arg-type]


PROJECT_TEST = '''
import torch

FAST = dict(warmup_s=0.0, budget_s=0.02, min_reps=5, target_rel_ci=0.5)


def test_threads(perfbench):
    before = torch.get_num_threads()  # pytester runs in this process: leave torch as found
    torch.set_num_threads(2)
    try:
        seen = set()
        perfbench(lambda: seen.add(torch.get_num_threads()), label="first", **FAST)
        assert torch.get_num_threads() == 2  # restored after each call
        perfbench(lambda: seen.add(torch.get_num_threads()), label="second", **FAST)
        assert torch.get_num_threads() == 2
        print("SEEN", sorted(seen))
    finally:
        torch.set_num_threads(before)
'''


def test_perfbench_default_and_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf=PROJECT_TEST)
    result = pytester.runpytest("-s", "--perfkit-out", "one")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SEEN [[]1[]]*"])
    (run_dir,) = list((pytester.path / "one").iterdir())
    run = load_run(run_dir)
    assert {p.measurement.extra["threads"] for p in run.points if p.measurement} == {1}
    assert run.env.cpu.threads == 1  # what perfbench timed with, not the count restored after

    result = pytester.runpytest("-s", "--perfkit-out", "two", "--perfkit-threads", "2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SEEN [[]2[]]*"])
    (run_dir,) = list((pytester.path / "two").iterdir())
    run = load_run(run_dir)
    assert {p.measurement.extra["threads"] for p in run.points if p.measurement} == {2}
    assert run.env.cpu.threads == 2


def test_perfbench_threads_argument_beats_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf='''
import torch

def test_one(perfbench):
    m = perfbench(lambda: None, threads=1, warmup_s=0.0, budget_s=0.02, min_reps=5, target_rel_ci=0.5)
    assert m.extra["threads"] == 1
''')
    pytester.runpytest("--perfkit-threads", "2").assert_outcomes(passed=1)


def test_bad_threads_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_perf="def test_one():\n    pass\n")
    result = pytester.runpytest("--perfkit-threads", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perfkit-threads is 0; it must be from 1 to 1024*"])
