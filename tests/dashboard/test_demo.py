"""`perfkit dashboard --demo`: a store of real CPU runs under a labelled demo history, built once."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.demo import DEMO_BRANCH, build, demo_commit
from perfkit.cli import main
from perfkit.store.api import open_store
from perfkit.store.read import get_run, load_run


def test_demo_store_is_built_once_from_real_runs(tmp_path: Path, seeded: Any) -> None:
    results = tmp_path / "results"
    shutil.copytree(seeded.runs_root / seeded.h100_runs[-1], results / "h100" / seeded.h100_runs[-1])
    lines: list[str] = []
    demo = build(tmp_path / "demo", commits=2, results=results, progress=lines.append)
    assert demo.built and "demo-01 ... demo-02" in demo.label and "1 GPU run(s)" in demo.label
    engine = open_store(demo.db_url)
    try:
        with engine.connect() as conn:
            info = json.loads((tmp_path / "demo" / "demo.json").read_text())
            assert len(info["runs"]) == 2 and info["gpu_runs"] == [seeded.h100_runs[-1]]
            for i, run_id in enumerate(info["runs"], start=1):
                row = get_run(conn, run_id)
                assert (row.commit, row.branch) == (demo_commit(i), DEMO_BRANCH)
                run = load_run(conn, run_id)
                assert run.env.extra["demo"]["commit_index"] == i and run.env.extra["demo"]["real_git"]  # labelled, real git kept
                ok = [p for p in run.points if p.status == "ok"]
                assert len(ok) == 4 and all(p.measurement and len(p.measurement.samples_s) >= 10 for p in ok)
                assert (demo.runs_dir / run_id / "run.json").is_file()
            assert get_run(conn, seeded.h100_runs[-1]).gpu == seeded.h100
    finally:
        engine.dispose()
    start = time.perf_counter()
    again = build(tmp_path / "demo", commits=2, results=results, progress=lines.append)
    assert not again.built and again.db_url == demo.db_url and time.perf_counter() - start < 2.0
    assert again.label == demo.label


@pytest.mark.parametrize("argv", [["--port", "0"], ["--port", "70000"]])
def test_bad_port_is_bad_input(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:  # refused while parsing, before anything starts
        main(["dashboard", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("perfkit dashboard: error: argument --port") and err.count("\n") == 1
