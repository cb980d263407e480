"""One map over independent work items (trace files) on a pluggable executor.

    results = parallel_map(load_trace, paths, Executor.parse("local", jobs=4))

- `local` (the default): a process pool of `jobs` workers (`concurrent.futures`, spawned processes:
  no state of the caller is inherited); one job, or one item, runs in this process.
- `dask-local`: a `dask.distributed.LocalCluster` of `jobs` worker processes, started and closed
  around the map.
- `dask://HOST:PORT` (or `tcp://HOST:PORT`): the workers of a running Dask scheduler (started by
  Dask's own launchers: dask-jobqueue on Slurm, the Dask Kubernetes operator, `dask scheduler` /
  `dask worker`); the items must be readable where the workers run (a shared file system).

Results come back in the order of the items. The first item that raises fails the map with that
exception (a PerfkitError keeps its one-line message). Dask is imported only for a Dask executor.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from perfkit.core.errors import PerfkitError

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")
R = TypeVar("R")
LOCAL, DASK_LOCAL = "local", "dask-local"
DASK_SCHEMES = ("dask://", "tcp://")


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Executor:
    kind: str  # LOCAL, DASK_LOCAL, or "dask" (a scheduler at `address`)
    jobs: int
    address: str = ""

    @classmethod
    def parse(cls, text: str | None, jobs: int | None = None) -> Executor:
        """`--executor` and `--jobs` as a user gives them; PerfkitError naming the fix."""
        value = (text or LOCAL).strip()
        if jobs is not None and jobs < 1:
            raise PerfkitError(f"--jobs {jobs}: give 1 or more worker processes")
        n = jobs or default_jobs()
        if value in (LOCAL, DASK_LOCAL):
            return cls(value, n)
        for scheme in DASK_SCHEMES:
            if value.startswith(scheme) and len(value) > len(scheme):
                return cls("dask", n, "tcp://" + value[len(scheme):])
        raise PerfkitError(f"--executor {value!r}: give local, dask-local or dask://HOST:PORT "
                             "(the address of a running Dask scheduler)")

    def describe(self) -> str:
        if self.kind == "dask":
            return f"Dask scheduler {self.address}"
        return f"{'Dask LocalCluster' if self.kind == DASK_LOCAL else 'process pool'} of {self.jobs} workers"


def parallel_map(fn: Callable[[T], R], items: Sequence[T], executor: Executor | None = None) -> list[R]:
    """[fn(item) for item in items], spread over the executor's workers (see the module doc)."""
    ex = executor or Executor(LOCAL, 1)
    if ex.kind == LOCAL and (ex.jobs <= 1 or len(items) <= 1):
        return [fn(item) for item in items]
    if ex.kind == LOCAL:
        return _pool_map(fn, items, min(ex.jobs, len(items)))
    return _dask_map(fn, items, ex)


def _pool_map(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """This process is one of the `jobs` workers: `jobs - 1` spawned processes and this one take
    the next item as each finishes (no idle core while a worker starts, and this process's own
    results are never pickled)."""
    from concurrent.futures import (  # only when a pool runs
        FIRST_COMPLETED,
        ProcessPoolExecutor,
        wait,
    )
    from multiprocessing import get_context

    results: list[Any] = [None] * len(items)
    pending: dict[Future[R], int] = {}
    nxt = 0
    with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=get_context("spawn")) as pool:
        try:
            while nxt < len(items) or pending:
                while nxt < len(items) and len(pending) < jobs - 1:  # one item queued per worker
                    pending[pool.submit(fn, items[nxt])] = nxt
                    nxt += 1
                if nxt < len(items):
                    results[nxt] = fn(items[nxt])
                    nxt += 1
                    finished = [f for f in pending if f.done()]
                else:
                    finished = list(wait(pending, return_when=FIRST_COMPLETED).done)
                for f in finished:
                    results[pending.pop(f)] = f.result()
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    return results


CONNECT_TIMEOUT_S = 10.0  # a scheduler across a network; PERFKIT_DASK_CONNECT_TIMEOUT_S changes it


def connect_timeout_s() -> float:
    """How long to wait for a dask:// scheduler: PERFKIT_DASK_CONNECT_TIMEOUT_S (0.1-600), else 10 s."""
    import os

    raw = os.environ.get("PERFKIT_DASK_CONNECT_TIMEOUT_S", "")
    try:
        value = float(raw) if raw else CONNECT_TIMEOUT_S
    except ValueError:
        raise PerfkitError(f"PERFKIT_DASK_CONNECT_TIMEOUT_S={raw!r}: not a number of seconds; "
                           "give e.g. 10") from None
    if not 0.1 <= value <= 600:
        raise PerfkitError(f"PERFKIT_DASK_CONNECT_TIMEOUT_S={raw!r}: give 0.1 to 600 seconds")
    return value


def _dask_map(fn: Callable[[T], R], items: Sequence[T], ex: Executor) -> list[R]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise PerfkitError(f"--executor {ex.kind}: Dask is not installed; pip install 'perfkit[cluster]' "
                             "(dask[distributed])") from None
    cluster: Any = None
    try:
        if ex.kind == DASK_LOCAL:
            cluster = LocalCluster(n_workers=ex.jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            try:
                client = Client(ex.address, timeout=f"{connect_timeout_s()}s")
            except OSError as exc:
                raise PerfkitError(f"--executor dask://{ex.address[len('tcp://'):]}: no Dask scheduler answered "
                                     f"({exc}); start one (dask scheduler) or give another address") from None
        with client:
            futures = client.map(fn, list(items), pure=False)
            return list(client.gather(futures))
    finally:
        if cluster is not None:
            cluster.close()
