"""One map over work items on a pluggable executor: order, errors, options."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.errors import PerfkitError, TraceError
from perfkit.core.parallel_map import DASK_LOCAL, LOCAL, Executor, parallel_map


@pytest.fixture(autouse=True)
def _children_import_this_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spawned workers unpickle this module's functions by name, with this process's sys.path:
    the repository on it (pytest's importlib mode does not put it there; whether an earlier test
    did depended on the order)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))


def square(x: int) -> int:
    return x * x


def fail_on_three(x: int) -> int:
    if x == 3:
        raise TraceError(f"item {x}: damaged; give another")
    return x


def test_parse_accepts_what_users_type() -> None:
    assert Executor.parse(None, 2) == Executor(LOCAL, 2)
    assert Executor.parse("dask-local", 3) == Executor(DASK_LOCAL, 3)
    assert Executor.parse("dask://10.0.0.5:8786", 1).address == "tcp://10.0.0.5:8786"
    assert Executor.parse("tcp://sched:8786", 1).address == "tcp://sched:8786"
    assert Executor.parse(None).jobs >= 1


@pytest.mark.parametrize(("text", "jobs", "says"), [("ray://x", None, "--executor 'ray://x'"), ("dask://", None, "dask://HOST:PORT"),
                                                    (None, 0, "--jobs 0")])
def test_parse_refuses_with_the_fix(text: str | None, jobs: int | None, says: str) -> None:
    with pytest.raises(PerfkitError, match="give") as err:
        Executor.parse(text, jobs)
    assert says in str(err.value)


def test_in_process_map_keeps_order() -> None:
    assert parallel_map(square, [3, 1, 2]) == [9, 1, 4]


@pytest.mark.slow
def test_a_process_pool_gives_the_same_results_in_order() -> None:
    assert parallel_map(square, list(range(7)), Executor(LOCAL, 2)) == [x * x for x in range(7)]


@pytest.mark.slow
def test_a_worker_error_reaches_the_caller_as_its_one_line() -> None:
    with pytest.raises(TraceError, match="item 3: damaged"):
        parallel_map(fail_on_three, [1, 2, 3, 4], Executor(LOCAL, 2))


def test_no_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setenv("PERFKIT_DASK_CONNECT_TIMEOUT_S", "1")  # nothing listens there: 1 s, not 10
    with pytest.raises(PerfkitError, match="no Dask scheduler answered"):
        parallel_map(square, [1, 2], Executor.parse("dask://127.0.0.1:1", 1))


@pytest.mark.parametrize("raw", ["soon", "0", "1e9", "nan"])
def test_a_bad_connect_timeout_is_one_line(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    from perfkit.core.parallel_map import connect_timeout_s

    monkeypatch.setenv("PERFKIT_DASK_CONNECT_TIMEOUT_S", raw)
    with pytest.raises(PerfkitError, match="PERFKIT_DASK_CONNECT_TIMEOUT_S"):
        connect_timeout_s()
