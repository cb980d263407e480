"""Every benchmark in benchmarks/ runs: each one's tiny mode as a process of its own, as a user runs it.

The table of smoke entries and the runner: tests/helpers/benchmark_smoke.py. A module in
benchmarks/ with neither a smoke entry nor a helper entry fails
test_every_benchmark_has_a_smoke_entry. The smoke runs are split between this file and
test_smoke_serving.py (the serving, gate and change-point benchmarks) so that two test
workers share them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.benchmark_smoke import (
    BENCHMARKS,
    HELPERS,
    SECOND_HALF,
    SMOKE,
    params,
    run_smoke,
)
from tests.helpers.forked_cli import ForkedCli


def _modules() -> set[str]:
    return {p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "__init__"}


def test_every_benchmark_has_a_smoke_entry() -> None:
    missing = _modules() - set(SMOKE) - set(HELPERS)
    assert not missing, f"benchmarks without a smoke entry in tests/helpers/benchmark_smoke.py: {sorted(missing)}"
    assert not (set(SMOKE) | set(HELPERS)) - _modules(), "entries for modules that are gone"


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_helpers_are_run_by_their_benchmark(helper: str) -> None:
    text = (BENCHMARKS / f"{helper}.py").read_text()
    assert '__name__ == "__main__"' not in text, f"{helper} runs on its own: give it a smoke entry"
    user = (BENCHMARKS / f"{HELPERS[helper]}.py").read_text()
    assert re.search(rf"from benchmarks(\.{helper} import| import [\w, ]*\b{helper}\b)", user), (helper, HELPERS[helper])


@pytest.mark.slow
@pytest.mark.parametrize("name", params(sorted(set(SMOKE) - SECOND_HALF)))
def test_benchmark_smoke_run(name: str, tmp_path: Path, server: ForkedCli) -> None:
    run_smoke(name, tmp_path, server)
