"""`perfkit runs` through perfkit.cli.main on real SQLite stores: runs stored from perfkit Runs
(tests/store/factory.py), a real CSV and a pytest-benchmark file ingested through the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.env import GpuState
from perfkit.store.api import open_store, store_run
from perfkit.store.records import from_run
from perfkit.store.write import write_runs
from tests.store import factory as f

DATA = Path(__file__).resolve().parents[1] / "store" / "data"
A100 = GpuState(index=0, name="NVIDIA A100-SXM4-80GB", driver="550.54.15")
HOSTILE = "evil\x1b[2J\x1b]8;;http://x\x07name\nsecond line\u202e"


def _run(run_id: str, day: int, *, commit: str, branch: str = "main", gpu: GpuState | None = None,
         spec: str = "demo", status: str = "complete", failed: bool = False) -> Any:
    points = [f.gemm_point([1e-3] * 5), *([f.failed_point()] if failed else [])]
    run = f.make_run(run_id, commit=commit, branch=branch, gpu=gpu, created=f"2026-01-{day:02d}T10:00:00+00:00",
                     points=points)
    return replace(run, spec={"name": spec, "points": ["gemm"]}, spec_hash=f"hash-{spec}", status=status)


@pytest.fixture(scope="module")
def stored_runs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Six runs: two branches, two GPUs, two specs, one interrupted, one with a failed point
    (written once for the module: the tests only read)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('runs') / 'perfkit.db'}"
    runs = [
        _run("r1", 1, commit="aaaa1111bbbb2222cccc3333dddd4444eeee5555", failed=True),
        _run("r2", 2, commit="aaaa2222", spec="moe"),
        _run("r3", 3, commit="bbbb3333", gpu=A100),
        _run("r4", 4, commit="cccc4444", branch="feature/x", status="interrupted"),
        _run("r5", 5, commit="dddd5555", spec="moe", gpu=A100),
        _run("r6", 6, commit="eeee6666"),
    ]
    engine = open_store(url)
    write_runs(engine, [from_run(run) for run in runs])
    engine.dispose()
    return url


@pytest.fixture
def store(stored_runs: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PERFKIT_DB", stored_runs)
    return stored_runs


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["runs", *args, "--format", "json"]) == 0
    runs: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["runs"]
    return runs


def _ids(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    return [r["run_id"] for r in _json(capsys, *args)]


def _table(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main(["runs", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_newest_first_and_the_limit(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _ids(capsys) == ["r6", "r5", "r4", "r3", "r2", "r1"]
    assert _ids(capsys, "--limit", "2") == ["r6", "r5"]
    with pytest.raises(SystemExit) as refused:  # refused at parse time, one line
        main(["runs", "--limit", "0"])
    assert refused.value.code == 2 and "--limit: 0 is below 1" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "ids"), [
    (("--branch", "main"), ["r6", "r5", "r3", "r2", "r1"]),
    (("--branch", "feature/x"), ["r4"]),
    (("--gpu", "a100"), ["r5", "r3"]),  # a part of the label, any case
    (("--gpu", "NVIDIA H100 80GB HBM3"), ["r6", "r4", "r2", "r1"]),
    (("--spec", "moe"), ["r5", "r2"]),
    (("--spec", "mo"), []),  # the spec's name, exact
    (("--commit", "aaaa"), ["r2", "r1"]),
    (("--commit", "aaaa1111bbbb2222cccc3333dddd4444eeee5555"), ["r1"]),
    (("--status", "interrupted"), ["r4"]),
    (("--branch", "main", "--gpu", "A100", "--spec", "demo"), ["r3"]),
    (("--commit", "a%"), []),  # LIKE wildcards are literal
])
def test_filters(store: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], ids: list[str]) -> None:
    assert _ids(capsys, *args) == ids


def test_filter_before_limit(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--limit keeps the newest runs of the filter, not the filter of the newest runs."""
    assert _ids(capsys, "--spec", "demo", "--limit", "2") == ["r6", "r4"]
    assert _ids(capsys, "--commit", "aaaa", "--limit", "1") == ["r2"]


def test_json_has_every_field(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    (r1,) = _json(capsys, "--commit", "aaaa1111")
    assert r1 == {
        "run_id": "r1", "created": "2026-01-01T10:00:00+00:00", "created_epoch": pytest.approx(1767261600.0),
        "commit": "aaaa1111bbbb2222cccc3333dddd4444eeee5555", "branch": "main", "gpu": "NVIDIA H100 80GB HBM3",
        "device": "cuda", "status": "complete", "source": "perfkit", "dirty": False, "spec": "demo",
        "points": {"ok": 1, "failed": 1}, "spec_hash": "hash-demo"}


def test_table_fits_80_columns_and_shows_each_run(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _table(capsys)
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    for words in (["run id", "time (UTC)", "status", "ok/failed", "source"], ["branch", "commit", "GPU", "spec"]):
        assert any(all(w in line for w in words) for line in lines)
    r1 = next(i for i, line in enumerate(lines) if line.startswith("r1 "))
    first, second = lines[r1].split(), lines[r1 + 1].split()
    assert first == ["r1", "2026-01-01", "10:00", "complete", "1/1", "run", "dir"]
    assert second[:2] == ["main", "aaaa1111bb"] and second[-1] == "demo"  # the commit cut to 10 characters
    assert "interrupted" in text and text.index("r6 ") < text.index("r1 ")


def test_wide_terminal_one_line_per_run(store: str) -> None:
    from perfkit.reports.runs_render import render_table
    from perfkit.store.run_list import run_listing

    engine = open_store(store)
    with engine.connect() as conn:
        runs = run_listing(conn)
    engine.dispose()
    lines = render_table(runs, 200).splitlines()
    assert len(lines) == 1 + len(runs) and all(len(line) <= 200 for line in lines)
    assert lines[0].split()[:4] == ["run", "id", "time", "(UTC)"]
    assert lines[1].split() == ["r6", "2026-01-06", "10:00", "main", "eeee6666", "NVIDIA", "H100", "80GB", "HBM3",
                                "demo", "complete", "1/0", "run", "dir"]


def test_hostile_names_are_escaped(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    long = "x" * 120
    store_run(_run("evil-run", 1, commit="ffff0000", branch=HOSTILE, spec=HOSTILE + long,
                   gpu=GpuState(index=0, name=HOSTILE)), db)
    lines = _table(capsys)
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\r" not in text
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines)  # header and run: two lines each
    assert "\\x1b[2J" in text and "\\n" in text  # shown as escapes, not obeyed
    (stored,) = _json(capsys)
    assert stored["branch"] == HOSTILE and stored["spec"] == HOSTILE + long  # the JSON has them whole


def test_empty_store_says_so_in_one_line(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    open_store(db).dispose()  # a store with no runs
    assert _table(capsys) == [f"no runs in {db}"]
    assert _json(capsys) == []
    assert _table(capsys, "--branch", "main") == [f"no runs matching --branch main in {db}"]


def test_no_store_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    assert main(["runs", "--db", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no store there" in err and len(err.splitlines()) == 1 and not missing.exists()


def test_ingested_runs_are_found_by_commit(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    csv_file = tmp_path / "bench.csv"
    csv_file.write_text("commit,metric,value,unit,direction,gpu,timestamp\n"
                        "1234abcd5678,decode:tok_per_s,100,tok/s,higher,H100,2026-03-01T00:00:00Z\n"
                        "1234abcd5678,decode:tok_per_s,101,tok/s,higher,H100,2026-03-01T00:00:01Z\n"
                        "9999ffff,decode:tok_per_s,99,tok/s,higher,H100,2026-03-02T00:00:00Z\n")
    assert main(["ingest", "--format", "csv", str(csv_file), "--branch", "release"]) == 0
    out = capsys.readouterr().out
    assert "(commit 1234abcd5678, branch release, H100, 1 metrics) stored" in out
    (csv_run,) = _json(capsys, "--commit", "1234ab")
    assert (csv_run["source"], csv_run["branch"], csv_run["commit"]) == ("csv", "release", "1234abcd5678")
    assert csv_run["run_id"] in out  # the id ingest printed is the one listed
    assert main(["ingest", "--format", "pytest-benchmark", str(DATA / "pytest_benchmark_data.json"),
                 "--gpu", "H100"]) == 0
    out = capsys.readouterr().out
    listed = _json(capsys, "--gpu", "H100")
    bench = next(r for r in listed if r["source"] == "pytest-benchmark")
    assert bench["run_id"] in out and (bench["commit"] and f"commit {bench['commit']}" in out)
    assert _ids(capsys, "--commit", bench["commit"][:8]) == [bench["run_id"]]
    table = "\n".join(_table(capsys))
    assert "csv" in table and "pytest" in table and "release" in table
    csv_line = next(line for line in table.splitlines() if line.startswith(csv_run["run_id"]))
    assert csv_line.split()[-2:] == ["-", "csv"]  # metrics, no points
