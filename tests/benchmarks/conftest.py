"""benchmarks/ is not installed: its tests import it from the repository root, put on the path here
(pytest's importlib mode does not), before any test module of this folder is imported; and the
benchmarks' fork server (tests/helpers/forked_cli.py), one per smoke module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.helpers.forked_cli import ForkedCli

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(scope="module")
def server() -> Iterator[ForkedCli]:
    from tests.helpers.benchmark_smoke import fork_server

    forks = fork_server()
    yield forks
    forks.close()
