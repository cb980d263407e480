"""tune.json's record (perfkit/core/tune_result.py): written and read back whole, an older file
(schema 1 as perfkit has always written it) reads, a damaged one is one located line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.core.tune_result import read_tune
from tests.helpers.tune_runs import write_tune_run

# A tune.json as `perfkit profile` wrote it before the record moved to perfkit/core (schema 1).
OLD_FILE = {
    "schema_version": 1, "run_id": "r0", "device": "cuda", "confidence": 0.95,
    "autotune": {"k": {"key": ["n"], "configs": ["triton.Config({'BLOCK_SIZE': 512}, num_warps=4)"]}},
    "shapes": [{
        "workload": "k", "shape": {"n": 1024},
        "best": {"config": {"BLOCK_SIZE": 512, "num_warps": 4}, "key": "custom/k/a", "status": "ok", "error": None,
                 "median_s": 1e-05, "ci_low_s": 9.9e-06, "ci_high_s": 1.01e-05, "n": 60, "timing_skipped": None,
                 "triton_config": "triton.Config({'BLOCK_SIZE': 512}, num_warps=4)"},
        "runner_up": {"config": {"BLOCK_SIZE": 256, "num_warps": 4}, "key": "custom/k/b", "status": "ok",
                      "error": None, "median_s": 2e-05, "ci_low_s": 1.98e-05, "ci_high_s": 2.02e-05, "n": 60,
                      "timing_skipped": None, "triton_config": "triton.Config({'BLOCK_SIZE': 256}, num_warps=4)"},
        "distinguishable": True, "speedup_vs_runner_up": 2.0, "configs_timed": 2, "configs_failed": 0,
        "note": "best is faster than the runner-up: their 95% confidence intervals do not overlap",
        "configs": [],
    }],
}


def test_written_results_read_back_equal(tmp_path: Path) -> None:
    where, results = write_tune_run(tmp_path)
    back = read_tune(where / "tune.json")
    assert back == results
    assert back[0].best is not None and back[0].best.config == {"BLOCK_SIZE": 512, "num_warps": 4}
    assert back[0].speedup_vs_runner_up == pytest.approx(2.0)
    assert (back[0].timed, back[0].failed) == (2, 1)
    data = json.loads((where / "tune.json").read_text())
    assert data["shapes"][0]["configs_failed"] == 1 and data["shapes"][0]["speedup_vs_runner_up"] == pytest.approx(2.0)
    assert data["shapes"][0]["best"]["triton_config"] == "triton.Config({'BLOCK_SIZE': 512}, num_warps=4)"


def test_an_older_file_reads(tmp_path: Path) -> None:
    path = tmp_path / "tune.json"
    path.write_text(json.dumps(OLD_FILE, indent=1))
    (r,) = read_tune(path)
    assert r.best is not None and r.runner_up is not None and r.best.median_s == 1e-05
    assert r.distinguishable is True and r.speedup_vs_runner_up == pytest.approx(2.0)


@pytest.mark.parametrize(("text", "where"), [
    ('{\n "schema_version": 1,\n "shapes": [\n', "tune.json:4:1: not valid JSON"),
    (json.dumps({**OLD_FILE, "shapes": [{**OLD_FILE["shapes"][0], "best": {"median_s": "fast"}}]}),
     'shapes[0].best.median_s: "fast" is not a number or null'),
    (json.dumps({"schema_version": 1, "shapes": 3}), "shapes: 3 is not a list"),
    (json.dumps({**OLD_FILE, "schema_version": 9}), "schema 9 is newer"),
    ("[1, 2]", "not a tune table"),
])
def test_a_damaged_file_is_one_located_line(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "tune.json"
    path.write_text(text)
    with pytest.raises(StoreError) as info:
        read_tune(path)
    message = str(info.value)
    assert where in message and str(path) in message and "\n" not in message
