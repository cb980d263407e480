"""asv results written by other projects (tests/data/asv): django-asv's version 2 results (samples,
two environments of one commit) and asv's own version 1 example results (params, failed and
skipped entries, mem / track types), each checked against a plain-json reading; then `perfkit
ingest --format asv`, `runs`, `history` (change points in commit-date order) and `gate`."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from perfkit.ingest.asv.parse import parse_asv
from tests.helpers.forked_cli import Result, run_perfkit

REPO = Path(__file__).resolve().parents[3]
DJANGO = REPO / "tests" / "data" / "asv" / "django_asv" / "results"
EXAMPLE = REPO / "tests" / "data" / "asv" / "asv_example_results" / "results"
SUFFIX = {"time": "time_s", "memory": "bytes", "peakmemory": "peak_bytes"}


def plain_expected(results_dir: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(machine, commit, env) -> metric name -> samples (or None: not measured), read with json alone."""
    bench = json.loads((results_dir / "benchmarks.json").read_text())
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for f in sorted(results_dir.glob("*/*.json")):
        if f.name == "machine.json":
            continue
        d = json.loads(f.read_text())
        cols = d.get("result_columns", ["result", "params", "samples"])
        env = d.get("env_name") or f.stem[9:]
        metrics: dict[str, Any] = {}
        for name, row in d["results"].items():
            if not isinstance(row, list):  # version 1
                row = [row, [], None] if not isinstance(row, dict) else \
                    [row["result"], row.get("params", []), row.get("samples")]
            c = dict(zip(cols, row, strict=False))  # asv drops trailing empty columns
            combos = list(itertools.product(*c["params"]))
            result = c["result"] if isinstance(c["result"], list) else [c["result"]] * len(combos)
            samples = c.get("samples") or [None] * len(combos)
            suffix = SUFFIX.get(bench[name]["type"], "value") if name in bench else "time_s"
            for combo, value, s in zip(combos, result, samples, strict=True):
                key = f"{name}({', '.join(combo)}):{suffix}" if combo else f"{name}:{suffix}"
                metrics[key] = None if value is None or value != value else tuple(s or [value])
        out[(f.parent.name, d["commit_hash"], env)] = metrics
    return out


@pytest.mark.parametrize("results_dir", [DJANGO, EXAMPLE], ids=["django-v2", "asv-example-v1"])
def test_every_benchmark_and_value_as_plain_json_reads_it(results_dir: Path) -> None:
    expected = plain_expected(results_dir)
    runs = parse_asv(results_dir)
    assert len(runs) == len(expected)
    for run in runs:
        machine, env = run.gpu.split("/", 1)
        want = expected[(machine, run.commit or "", env)]
        assert {m.name: m.samples for m in run.metrics} == {k: v for k, v in want.items() if v is not None}
        missing = [k for k, v in want.items() if v is None]
        assert sorted(run.extra.get("not_measured", {}).get("failed", []) +
                      run.extra.get("not_measured", {}).get("skipped", [])) == sorted(missing)
    assert [r.created_epoch for r in runs] == sorted(r.created_epoch for r in runs)


def test_django_runs_are_dated_by_commit_and_keep_samples() -> None:
    runs = parse_asv(DJANGO)
    assert len(runs) == 17 and {r.gpu for r in runs} == {"ubuntu-22.04/conda-py3.10", "ubuntu-22.04/conda-py3.9"}
    last = json.loads((DJANGO / "ubuntu-22.04" / "4488a25c-conda-py3.9.json").read_text())
    (run,) = [r for r in runs if r.gpu.endswith("py3.9")]
    assert run.created_epoch == last["date"] / 1000 and run.env.python == "3.9" and run.host == "ubuntu-22.04"
    assert len(run.metrics) == 52 and all(len(m.samples) == 10 and m.unit == "s" for m in run.metrics)
    assert run.env.source is not None and run.env.source.format == "asv" and run.env.source.version == "2"


def test_asv_example_params_failures_and_types() -> None:
    runs = parse_asv(EXAMPLE)
    machine = json.loads((EXAMPLE / "cheetah" / "machine.json").read_text())
    fcf = {r.gpu: r for r in runs if (r.commit or "").startswith("fcf8c079")}
    assert set(fcf) == {"cheetah/py2.7-Cython-numpy1.8", "cheetah/py2.7-Cython-numpy1.8-foo"}
    run = fcf["cheetah/py2.7-Cython-numpy1.8"]
    m = {x.name: x for x in run.metrics}
    assert m["time_other.time_parameterized(1):time_s"].samples == (1.0,)
    assert m["time_other.time_parameterized(2):time_s"].samples == (4.0,)
    assert m["time_secondary.track_value:value"].unit == "unit" and m["time_secondary.track_value:value"].value == 42
    assert all(x.direction == "lower" for x in run.metrics)
    assert run.extra["not_measured"] == {
        "failed": ["time_AAA_failure:time_s", "time_coordinates.time_latitude:time_s",
                   "time_other.time_parameterized(3):time_s", "params_examples.ParamSuite.track_value:value"],
        "skipped": ["time_AAA_skip:time_s"]}
    assert not any(math.isnan(x.value) or x.value == 0 for x in run.metrics)
    assert run.env.cpu.model == machine["cpu"] and run.env.os == machine["os"]


def _perfkit(*args: str, db: str) -> Result:
    """`python -m perfkit ARGS --db DB` (a process forked from the test process's fork server)."""
    return run_perfkit([*args, "--db", db], Path.cwd())


@pytest.mark.slow
def test_cli_ingest_is_idempotent_and_history_finds_the_change_in_commit_order(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    first = _perfkit("ingest", "--format", "asv", str(DJANGO), "--branch", "main", db=db)
    assert first.returncode == 0 and first.stdout.count(") stored") == 17, first.stderr
    again = _perfkit("ingest", "--format", "asv", str(DJANGO / "ubuntu-22.04"), db=db)
    assert again.returncode == 0 and again.stdout.count("already stored, skipped") == 17, again.stderr
    runs = _perfkit("runs", "--format", "json", db=db)
    assert runs.returncode == 0 and len(json.loads(runs.stdout)["runs"]) == 17
    name = "query_benchmarks.query_exists.benchmark.QueryExists.time_query_exists:time_s"
    hist = _perfkit("history", name, "--gpu", "ubuntu-22.04/conda-py3.10", "--format", "json", db=db)
    assert hist.returncode == 0, hist.stderr
    data = json.loads(hist.stdout)
    by_date = sorted((json.loads(f.read_text())["date"], json.loads(f.read_text())["commit_hash"])
                     for f in (DJANGO / "ubuntu-22.04").glob("*-conda-py3.10.json"))
    (series,) = data["series"]
    assert [v["commit"] for v in series["values"]] == [c for _, c in by_date]  # commit order: by commit date
    (cp,) = data["change_points"]  # django's query benchmarks got ~4.6% slower at 0cbbed49 (Aug 2022)
    assert (cp["previous_commit"], cp["commit"]) == (by_date[8][1], by_date[9][1]) and cp["kind"] == "regression"
    last = next(r for r in parse_asv(DJANGO) if r.commit == by_date[-1][1] and r.gpu.endswith("py3.10"))
    gate = _perfkit("gate", "--baseline", "main@ubuntu-22.04/conda-py3.10", "--candidate", last.run_id, db=db)
    # 48 benchmarks in both runs (4 new ones only in the candidate); the verdict is the gate's own
    assert gate.returncode in (0, 1) and "48 measurements" in gate.stdout and "only in candidate (4)" in gate.stdout, \
        gate.stdout + gate.stderr


@pytest.mark.parametrize("where", ["results", "machine", "v2 file", "v1 file"])
def test_asv_results_without_format_asv_are_named(where: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A run-directory ingest given an asv folder or result file says which --format it needs."""
    from perfkit.cli import main

    django = DJANGO
    v1 = next(p for p in sorted(EXAMPLE.rglob("*.json"))
              if p.name not in ("machine.json", "benchmarks.json") and "odd" not in p.parts)
    path = {"results": django, "machine": django / "ubuntu-22.04",
            "v2 file": sorted((django / "ubuntu-22.04").glob("*-conda-*.json"))[0], "v1 file": v1}[where]
    db = tmp_path / "s.db"
    assert main(["ingest", str(path), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: an asv result" in err and "pass --format asv" in err
    assert not db.exists()
