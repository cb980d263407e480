"""pytest-benchmark ingest, on files written by pytest-benchmark 5 (--benchmark-json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.ingest.pytest_benchmark import parse_pytest_benchmark

DATA = Path(__file__).resolve().parents[1] / "store" / "data"


def test_per_round_samples_become_a_run() -> None:
    path = DATA / "pytest_benchmark_data.json"
    raw = json.loads(path.read_text())
    (run,) = parse_pytest_benchmark(path)
    assert run.commit == raw["commit_info"]["id"] and run.branch == "main"
    assert run.gpu == raw["machine_info"]["cpu"]["brand_raw"]
    m = {x.name: x for x in run.metrics}
    small = m["test_x.py::test_sum_small:time_s"]
    assert small.samples == tuple(raw["benchmarks"][0]["stats"]["data"]) and len(small.samples) == 7
    assert small.direction == "lower" and small.unit == "s"
    assert parse_pytest_benchmark(path)[0].run_id == run.run_id


def test_without_raw_data_the_median_is_kept() -> None:
    path = DATA / "pytest_benchmark_nodata.json"
    raw = json.loads(path.read_text())
    (run,) = parse_pytest_benchmark(path, gpu="NVIDIA L4", branch="feature")
    assert run.gpu == "NVIDIA L4" and run.branch == "feature"
    assert run.metrics[0].samples == (raw["benchmarks"][0]["stats"]["median"],)


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ("{not json", "not valid JSON"),
        ('{"results": []}', "no 'benchmarks' list"),
        ('{"benchmarks": [], "datetime": "2026-01-01T00:00:00"}', "is empty"),
        ('{"benchmarks": [{"name": "t"}], "datetime": "2026-01-01T00:00:00"}', "benchmarks[0]: no 'stats'"),
        ('{"benchmarks": [{"name": "t", "stats": {"data": [0.1, -1]}}], "datetime": "2026-01-01"}', "finite and > 0"),
        ('{"benchmarks": [{"name": "t", "stats": {"median": 0.1}}]}', "no 'datetime'"),
        ('{"benchmarks": [{"name": "t", "stats": {"median": 0.1}}], "datetime": "2026-01-01", "machine_info": 1e308}',
         "machine_info is 1e+308, not an object"),
        ('{"benchmarks": [{"name": "t", "stats": {"median": 0.1}}], "datetime": "2026-01-01", "commit_info": [1]}',
         "commit_info is [1], not an object"),
    ],
)
def test_bad_files(tmp_path: Path, content: str, what: str) -> None:
    p = tmp_path / "bench.json"
    p.write_text(content)
    with pytest.raises(StoreError, match=None) as err:
        parse_pytest_benchmark(p)
    assert what in str(err.value) and str(p) in str(err.value)
