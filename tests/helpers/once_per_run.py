"""A session fixture's value built once per test run, whatever the number of xdist workers.

The first worker to ask builds it in a folder of the run's shared temporary folder (the parent of
each worker's basetemp, `pytest-of-USER/pytest-N/`), under a file lock, and leaves the value
pickled beside it; a later worker waits on the lock and loads it. Without xdist it is the plain
session fixture. The value must be picklable (paths, strings, dataclasses of them) and what it
names must only be read by the tests (both workers read it at once).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """`make(folder)` once per test run: in this process without xdist, else in the first worker."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return make(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent  # shared by the workers of this run
    folder, value_file = root / f"once-{name}", root / f"once-{name}.pickle"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if make raises
        if value_file.is_file():
            return pickle.loads(value_file.read_bytes())
        shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way in the other worker
        folder.mkdir()
        value = make(folder)
        value_file.write_bytes(pickle.dumps(value))
        return value
