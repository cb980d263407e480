"""Shared test configuration: single-threaded torch, the `gpu` and `llama` markers, shared trace
folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

# Hermetic: no test (nor a subprocess it starts, which inherits this environment) reads or writes
# the user's ~/.cache/perfkit (calibrations, demo store) or ./perfkit.db. Set at import, before any
# test module imports perfkit; a test that needs the defaults themselves uses monkeypatch.
_HERMETIC_HOME = Path(tempfile.mkdtemp(prefix="perfkit-tests-"))
os.environ["PERFKIT_HOME"] = str(_HERMETIC_HOME / "home")
os.environ["PERFKIT_DB"] = f"sqlite:///{_HERMETIC_HOME / 'perfkit.db'}"
# hypothesis keeps its caches there too, not in ./.hypothesis of the working tree
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(_HERMETIC_HOME / "hypothesis")
# Tables fit $COLUMNS when set: a developer's shell must not change what "fits 80 columns" means
# (a test that wants a width sets COLUMNS itself).
os.environ.pop("COLUMNS", None)
# Hermetic: the tools the tests lay out on PATH, never an Nsight installed on this machine
os.environ["PERFKIT_TOOL_DIRS"] = ""

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "bench" / "traces"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start this test process's fork server for `python -m perfkit` (tests/helpers/forked_cli.py):
    it imports perfkit and torch while the tests are collected, so the first test to run a
    command does not wait for it (nor count that wait in a time it measures). Not in the xdist
    controller, which runs no test."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(session.config.option, "numprocesses", None):
        from tests.helpers.forked_cli import shared_server

        shared_server()


def pytest_configure(config: pytest.Config) -> None:
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HERMETIC_HOME, ignore_errors=True)


LLAMA_SERVER_ENV = "PERFKIT_LLAMA_SERVER"  # a built llama-server (scripts/build-llama-server.sh)


def llama_server_skip_reason() -> str | None:
    """Why the `llama` tests cannot run here (None: $PERFKIT_LLAMA_SERVER is an executable)."""
    path = os.environ.get(LLAMA_SERVER_ENV, "")
    if not path:
        return f"set {LLAMA_SERVER_ENV} to a llama-server binary (scripts/build-llama-server.sh)"
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"{LLAMA_SERVER_ENV}={path} is not an executable file"
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("dist", None) == "loadgroup":
        balance(items)
    llama_reason = llama_server_skip_reason()
    if llama_reason is not None:
        skip_llama = pytest.mark.skip(reason=llama_reason)
        for item in items:
            if item.get_closest_marker("llama") is not None:
                item.add_marker(skip_llama)
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def balance(items: list[pytest.Item]) -> None:
    """How scripts/test.sh's workers share the tests (`--dist loadgroup`): a module that uses a
    fixture of its own wider than a test (module or session scope: a server, a profiled run, a
    wheel) goes to one worker whole, as `--dist loadfile` sends every module, so that fixture is
    made once; every other test goes to whichever worker is free. xdist hands out the groups
    first (most tests first), then the single tests in this order: the slow ones (marked
    `slow`: >= 0.5 s) before the rest, so that the last tests to start are short and no worker
    waits long for the other at the end."""
    for item in items:
        defs = getattr(item, "_fixtureinfo", None)
        wide = defs is not None and any(
            d.scope != "function" and d.baseid  # this suite's own (a plugin's has no baseid)
            for fixturedefs in defs.name2fixturedefs.values() for d in fixturedefs)
        if wide:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: else in collection order


@pytest.fixture
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"{SHARED_TRACES} is absent")
    return SHARED_TRACES
