"""Values near the float limit: what is stored is finite, and one series never breaks the others."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.ingest.csv_table import parse_csv
from perfkit.store.api import open_store
from perfkit.store.metrics import MetricRecord
from perfkit.store.write import write_runs
from tests.helpers.forked_cli import run_perfkit

HEADER = "commit,metric,value,unit,direction,gpu,timestamp\n"


def test_median_of_huge_values_does_not_overflow() -> None:
    m = MetricRecord("big", None, "s", "lower", (1e308, 1.5e308))
    assert math.isfinite(m.value) and m.value == pytest.approx(1.25e308)


@pytest.mark.slow
def test_huge_csv_values_are_stored_and_history_still_works(tmp_path: Path) -> None:
    csv = tmp_path / "big.csv"
    csv.write_text(HEADER + "".join(f"c{i},big,1e308,s,lower,cpu,2026-01-0{i}T00:00:00Z\n"
                                    f"c{i},big,1e308,s,lower,cpu,2026-01-0{i}T00:00:00Z\n"
                                    f"c{i},small,{1 + i / 100},s,lower,cpu,2026-01-0{i}T00:00:00Z\n"
                                    for i in range(1, 7)))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for args in (["ingest", "--format", "csv", str(csv)], ["history", "*"], ["history", "small"]):
        proc = run_perfkit([*args, "--db", db], Path.cwd(), env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_non_finite_value_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    csv = tmp_path / "ok.csv"
    csv.write_text(HEADER + "c1,m,1.0,s,lower,cpu,2026-01-01T00:00:00Z\n")
    (run,) = parse_csv(str(csv))
    bad = dataclasses.replace(run, metrics=(dataclasses.replace(run.metrics[0], samples=(1.0, math.inf)),))
    engine = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        with pytest.raises(StoreError, match=r"not finite.*nothing was written"):
            write_runs(engine, [bad])
        assert write_runs(engine, [run]) == [True]  # the same run, finite, is stored whole
    finally:
        engine.dispose()
