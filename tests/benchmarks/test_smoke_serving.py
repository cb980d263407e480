"""The second half of the benchmarks' smoke runs (test_smoke.py has the first and the table's checks):
the serving, gate and change-point benchmarks, in a module of their own so that a second test
worker takes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.benchmark_smoke import SECOND_HALF, params, run_smoke
from tests.helpers.forked_cli import ForkedCli


@pytest.mark.slow
@pytest.mark.parametrize("name", params(sorted(SECOND_HALF)))
def test_benchmark_smoke_run(name: str, tmp_path: Path, server: ForkedCli) -> None:
    run_smoke(name, tmp_path, server)
