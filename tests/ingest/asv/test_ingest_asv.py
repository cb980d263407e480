"""asv ingest: parameterized version 2 results, and bad inputs refused in one located line with
nothing stored (a truncated file, an unknown version, a short result list, a non-number result,
a file in another machine's folder). Real files: test_ingest_asv_real.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfkit.core.errors import StoreError
from perfkit.ingest.asv.parse import parse_asv
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[3]
DJANGO = REPO / "tests" / "data" / "asv" / "django_asv" / "results"
ODD = REPO / "tests" / "data" / "asv" / "asv_example_results" / "odd"
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def results_dir(tmp_path: Path, results: dict[str, Any], **top: Any) -> Path:
    machine = tmp_path / "results" / "box"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "box", "cpu": "Some CPU", "num_cpu": "8",
                                                      "os": "Linux", "version": 1}))
    (tmp_path / "results" / "benchmarks.json").write_text(json.dumps({
        "b.TimeOps.time_op": {"type": "time", "unit": "seconds", "params": [["10", "20"], ["'f'", "'i'"]]},
        "b.peakmem_load": {"type": "peakmemory", "unit": "bytes", "params": []},
        "b.track_items": {"type": "track", "unit": "items", "params": []}, "version": 2}))
    data = {"commit_hash": "c0ffee" * 6 + "0000", "env_name": "virtualenv-py3.12", "date": 1700000000000,
            "params": {"machine": "box", "python": "3.12"}, "python": "3.12", "requirements": {},
            "result_columns": COLUMNS, "results": results, "version": 2, **top}
    (machine / "c0ffeec0-virtualenv-py3.12.json").write_text(json.dumps(data).replace('"NaN"', "NaN"))
    return tmp_path / "results"


GOOD = {
    "b.TimeOps.time_op": [[0.5, None, "NaN", 0.25], [["10", "20"], ["'f'", "'i'"]], "v1", 1, 2.0,
                          None, None, None, None, None, None, [[0.4, 0.5, 0.6], None, None, None]],
    "b.peakmem_load": [[1048576], [], "v1"],
    "b.track_items": [[-3], []],
}


def test_params_become_one_metric_per_combination(tmp_path: Path) -> None:
    (run,) = parse_asv(results_dir(tmp_path, GOOD))
    m = {x.name: x for x in run.metrics}
    assert list(m) == ["b.TimeOps.time_op(10, 'f'):time_s", "b.TimeOps.time_op(20, 'i'):time_s",
                       "b.peakmem_load:peak_bytes", "b.track_items:value"]
    assert m["b.TimeOps.time_op(10, 'f'):time_s"].samples == (0.4, 0.5, 0.6)  # raw samples when recorded
    assert m["b.TimeOps.time_op(20, 'i'):time_s"].samples == (0.25,)  # else the result
    assert (m["b.peakmem_load:peak_bytes"].unit, m["b.track_items:value"].unit) == ("B", "items")
    assert m["b.track_items:value"].value == -3 and m["b.track_items:value"].direction == "lower"
    assert run.extra["not_measured"] == {"failed": ["b.TimeOps.time_op(10, 'i'):time_s"],
                                         "skipped": ["b.TimeOps.time_op(20, 'f'):time_s"]}
    assert run.gpu == "box/virtualenv-py3.12" and run.env.cpu.cores == 8 and run.created.startswith("2023-11-14")
    assert parse_asv(tmp_path / "results" / "box")[0].run_id == run.run_id  # one machine folder: same run


@pytest.mark.parametrize(
    ("results", "top", "what"),
    [
        ({"b.track_items": [[1.0]]}, {}, 'results["b.track_items"] has 1 columns; result_columns names 13'),
        ({"b.track_items": [["fast"], []]}, {}, 'results["b.track_items"] result[0] is "fast", not a number'),
        ({"b.track_items": [[True], []]}, {}, "result[0] is true, not a number"),
        ({"b.TimeOps.time_op": [[1.0, 2.0], [["10", "20"], ["'f'"]], None, None, None, None, None, None, None,
                                None, None, [[1.0, "x"]]]}, {}, "samples do not hold one list per parameter"),
        ({"b.TimeOps.time_op": [[1.0], [["10", "20"]]]}, {}, "1 result values for 2 parameter combinations"),
        ({}, {"version": 3}, "results file version 3; perfkit reads asv results versions 1 and 2"),
        ({}, {"date": "yesterday"}, "'date' is \"yesterday\", not milliseconds since the epoch"),
        ({"b.track_items": [[1.0], []]}, {"params": {"machine": "other"}}, "ran on machine 'other'"),
    ],
)
def test_bad_results_are_refused_located(tmp_path: Path, results: dict[str, Any], top: dict[str, Any],
                                         what: str) -> None:
    path = results_dir(tmp_path, results, **top)
    with pytest.raises(StoreError) as err:
        parse_asv(path)
    assert what in str(err.value) and "c0ffeec0-virtualenv-py3.12.json" in str(err.value)


@pytest.mark.parametrize(("odd", "what"), [
    ("aaaaaaaa-py2.7-Cython-numpy1.8.json", ".json:2:5: not valid JSON"),
    ("bbbbbbbb-py2.7-Cython-numpy1.8.json", "no 'results' object; not an asv results file"),
    ("cccccccc-py2.7-Cython-numpy1.8.json", "ran on machine 'not-cheetah', but its folder's machine.json says"),
])
def test_asvs_own_odd_files_are_refused(tmp_path: Path, odd: str, what: str) -> None:
    folder = tmp_path / "cheetah"
    folder.mkdir()
    shutil.copy(ODD.parent / "results" / "cheetah" / "machine.json", folder)
    shutil.copy(ODD / odd, folder)
    with pytest.raises(StoreError, match=None) as err:
        parse_asv(folder)
    assert what in str(err.value)


def test_not_a_results_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no MACHINE/machine\.json under it"):
        parse_asv(tmp_path)


@pytest.mark.slow
def test_cli_bad_file_exits_2_in_one_line_and_stores_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "results"
    shutil.copytree(DJANGO, copy)
    victim = copy / "ubuntu-22.04" / "4488a25c-conda-py3.9.json"
    victim.write_bytes(victim.read_bytes()[:5000])  # truncated: a results file cut short
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    db = f"sqlite:///{tmp_path / 's.db'}"
    bad = run_perfkit(["ingest", "--format", "asv", str(copy), "--db", db], Path.cwd(), env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert f"{victim}:1:" in bad.stderr and "not valid JSON" in bad.stderr and bad.stdout == ""
    assert not (tmp_path / "s.db").exists()  # every file is read before the store is opened
