"""`perfkit ingest / compare / gate / history / ab` end to end, through perfkit.cli.main, on a
real SQLite store and run directories on disk."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.core.env import GpuState
from perfkit.store.api import store_run
from tests.store import factory as f

KEY = "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16"


def _history(url: str, n: int = 20) -> None:
    """n earlier main runs on the H100 with a 1% run-to-run offset."""
    import numpy as np

    rng = np.random.default_rng(0)
    for i in range(n):
        level = 1e-3 * float(np.exp(rng.normal(0, 0.01)))
        store_run(f.make_run(f"hist{i:02d}", f.noisy(level, 10, 100 + i), commit=f"h{i:02d}",
                             created=f"2026-01-{i + 1:02d}T00:00:00Z"), url)


def _run_dir(tmp_path: Path, run_id: str, level: float, seed: int, **kw: Any) -> Path:
    run = f.make_run(run_id, f.noisy(level, 10, seed), created="2026-02-01T00:00:00Z", **kw)
    d = tmp_path / run_id
    write_json_atomic(d / "run.json", to_builtins(run))
    return d


def _json_out(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def test_gate_exit_codes_and_reports(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _history(db)
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    same = _run_dir(tmp_path, "same", 1e-3, 2)
    slow = _run_dir(tmp_path, "slow", 1.15e-3, 3, commit="bad0001")
    md, junit = tmp_path / "gate.md", tmp_path / "gate.xml"
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--format", "json"]) == 0
    out = _json_out(capsys)
    assert {m["verdict"] for m in out["metrics"]} <= {"unchanged", "inconclusive"} and not out["failed"]
    assert len(out["rows"]) == 1 and out["rows"][0]["point"] == KEY and out["rows"][0]["label"] == "mm"
    assert out["rows"][0]["also"] == [f"{KEY}:flop_per_s", f"{KEY}:bytes_per_s"] and out["tests"] == 1

    code = main(["gate", "--baseline", str(base), "--candidate", str(slow), "--markdown", str(md),
                 "--junit", str(junit)])
    assert code == 1
    text = md.read_text()
    assert "fails: 1 regressed" in text and "| ❌ regressed | mm |" in text and "| verdict | point |" in text
    suite = ET.parse(junit).getroot().find("testsuite")  # one test case per measurement
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "1"
    assert summary.read_text().count("### perfkit gate") == 2  # both gates appended
    assert "regressed" in capsys.readouterr().out


def test_gate_bad_input_exits_2(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    a100 = _run_dir(tmp_path, "a100", 1e-3, 2, gpu=GpuState(name="NVIDIA A100-SXM4-80GB", driver="550.54.15"))
    assert main(["gate", "--baseline", str(base), "--candidate", str(a100)]) == 2
    assert "nothing comparable (GPU differs" in capsys.readouterr().err
    assert main(["gate", "--baseline", str(base), "--candidate", "no-such-run"]) == 2
    assert "no-such-run" in capsys.readouterr().err
    policy = tmp_path / "gate.yaml"
    policy.write_text("defaults:\n  max_p: 7\n")
    assert main(["gate", "--baseline", str(base), "--candidate", str(base), "--policy", str(policy)]) == 2
    assert f"{policy}:2:10" in capsys.readouterr().err


def test_policy_raises_min_effect(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _history(db)
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    slow = _run_dir(tmp_path, "slow", 1.15e-3, 3)
    policy = tmp_path / "gate.yaml"
    policy.write_text("metrics:\n  - match: 'gemm/*'\n    min_effect: 0.25\n")
    assert main(["gate", "--baseline", str(base), "--candidate", str(slow), "--policy", str(policy)]) == 0
    capsys.readouterr()


def test_compare_json_and_branch_at_gpu(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _history(db)
    store_run(f.make_run("feat1", f.noisy(1.2e-3, 10, 7), branch="feature", commit="f1",
                         created="2026-02-02T00:00:00Z"), db)
    assert main(["compare", "main@H100", "feature@H100", "--format", "json"]) == 0
    out = _json_out(capsys)
    assert out["baseline"]["run_id"] == "hist19" and out["candidate"]["run_id"] == "feat1"
    metrics = {m["metric"]: m for m in out["metrics"]}
    t = metrics[f"{KEY}:time_s"]
    assert t["verdict"] == "regressed" and t["ratio"] == pytest.approx(1.2, abs=0.03)
    assert t["interval"][0] < t["ratio"] < t["interval"][1] and 0 <= t["p_value"] <= 0.05
    assert t["history_runs"] == 20
    assert metrics[f"{KEY}:flop_per_s"]["verdict"] == "regressed"  # lower throughput is worse too
    assert main(["compare", "main@H100", "feature@H100", "--metric", "*:time_s"]) == 0
    table = capsys.readouterr().out
    assert "regressed" in table and "flop_per_s" not in table


def test_ingest_then_history_finds_the_step(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    rng = np.random.default_rng(11)
    lines = ["commit,metric,value,unit,direction,gpu,timestamp"]
    for i in range(60):
        level = 100.0 * (0.95 if i >= 35 else 1.0)  # throughput drops 5% at commit c35
        for j in range(5):
            lines.append(f"c{i:02d},decode:tok_per_s,{level * (1 + 0.01 * rng.standard_normal()):.4f},tok/s,"
                         f"higher,H100,2026-03-01T{i // 60:02d}:{i % 60:02d}:{j:02d}Z")
    csv_file = tmp_path / "bench.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    assert main(["ingest", "--format", "csv", str(csv_file), "--branch", "main"]) == 0
    assert "stored" in capsys.readouterr().out
    assert main(["ingest", "--format", "csv", str(csv_file), "--branch", "main"]) == 0
    assert capsys.readouterr().out.count("already stored") == 60
    assert main(["history", "decode:tok_per_s", "--gpu", "H100", "--format", "json"]) == 0
    out = _json_out(capsys)
    (cp,) = out["change_points"]
    assert cp["commit"] == "c35" and cp["previous_commit"] == "c34" and cp["kind"] == "regression"
    assert cp["magnitude"] == pytest.approx(-0.05, abs=0.01) and cp["p_value"] <= 0.001
    (series,) = out["series"]
    assert {k: series[k] for k in ("metric", "gpu", "commits", "unit")} == {
        "metric": "decode:tok_per_s", "gpu": "H100", "commits": 60, "unit": "tok/s"}
    values = series["values"]  # always in the JSON: each commit's value and its segment's band
    assert [v["commit"] for v in values] == [f"c{i:02d}" for i in range(60)]
    assert values[0]["level"] == pytest.approx(100.0, rel=0.01) and values[59]["level"] == pytest.approx(95.0, rel=0.01)
    assert all(v["band_low"] < v["level"] < v["band_high"] for v in values)
    assert main(["history", "decode:tok_per_s", "--format", "md"]) == 0
    assert "c35" in capsys.readouterr().out
    assert main(["history", "decode:tok_per_sec"]) == 2
    assert "did you mean decode:tok_per_s" in capsys.readouterr().err


def test_ingest_bad_csv_stores_nothing(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.csv"
    good.write_text("commit,metric,value,unit,direction,gpu,timestamp\na,m,1.0,s,lower,cpu,2026-01-01\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("commit,metric,value,unit,direction,gpu,timestamp\na,m,1.0,s,lower,cpu,2026-01-01\n"
                   "b,m,oops,s,lower,cpu,2026-01-02\n")
    assert main(["ingest", "--format", "csv", str(good), str(bad)]) == 2
    assert f"{bad}:3:3" in capsys.readouterr().err
    assert not (tmp_path / "perfkit.db").exists()  # parsed everything first: nothing written


def test_ingest_run_dirs_and_pytest_benchmark(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run_dir(tmp_path, "r1", 1e-3, 1)
    assert main(["ingest", str(d)]) == 0
    pb = Path(__file__).resolve().parents[1] / "store" / "data" / "pytest_benchmark_data.json"
    assert main(["ingest", "--format", "pytest-benchmark", str(pb), "--gpu", "cpu-box"]) == 0
    out = capsys.readouterr().out
    assert "run r1" in out and "2 metrics) stored" in out
    assert main(["ingest", str(tmp_path / "nope")]) == 2


def _sleeper(seconds: float) -> str:
    return f"{sys.executable} -c 'import time; time.sleep({seconds})'"


@pytest.mark.slow
def test_ab_interleaved(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ab", "--baseline", _sleeper(0.01), "--candidate", _sleeper(0.08), "--rounds", "8",
                 "--warmup", "0", "--format", "json"]) == 1
    out = _json_out(capsys)
    (m,) = out["metrics"]
    assert m["verdict"] == "regressed" and m["ratio"] > 1.3
    assert main(["ab", "--baseline", "false", "--candidate", "true", "--rounds", "3"]) == 2
    assert "exited 1" in capsys.readouterr().err


def test_gate_without_history_explains_its_prior(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty store: the gate says the run-to-run spread is assumed, in every metric's reason,
    and a 15% slowdown of quiet runs is still a regression."""
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    slow = _run_dir(tmp_path, "slow", 1.15e-3, 3, commit="bad0001")
    assert main(["gate", "--baseline", str(base), "--candidate", str(slow), "--format", "json"]) == 1
    out = _json_out(capsys)
    time_m = next(m for m in out["metrics"] if m["metric"] == f"{KEY}:time_s")
    assert time_m["history_runs"] == 0 and time_m["verdict"] == "regressed"
    assert "no history: run-to-run spread assumed" in time_m["reason"] and time_m["run_spread"] >= 0.01


def test_fail_on_policy_and_exit_codes(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """No history: the unchanged candidate is inconclusive. The default policy passes it (exit
    0); `fail_on: [regressed, inconclusive]` refuses to pass without a decision (exit 1)."""
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    same = _run_dir(tmp_path, "same", 1e-3, 2)
    assert main(["gate", "--baseline", str(base), "--candidate", str(same)]) == 0
    out = capsys.readouterr().out
    assert "1 measurement (3 metrics): 0 regressed, 1 inconclusive" in out
    strict = tmp_path / "strict.yaml"
    strict.write_text("fail_on: [regressed, inconclusive]\n")
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--policy", str(strict)]) == 1
    out = capsys.readouterr().out
    assert "gate fails: 1 inconclusive" in out and "0 regressed" in out
    never = tmp_path / "never.yaml"
    never.write_text("fail_on: []\n")
    slow = _run_dir(tmp_path, "slow", 1.5e-3, 3)
    assert main(["gate", "--baseline", str(base), "--candidate", str(slow), "--policy", str(never)]) == 0
    assert "1 regressed" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("fail_on: [regressed, slower]\n")
    assert main(["gate", "--baseline", str(base), "--candidate", str(same), "--policy", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}:1:22: fail_on: unknown verdict 'slower'" in err and "\n" not in err


def test_same_run_twice_is_refused(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = _run_dir(tmp_path, "base", 1e-3, 1)
    for cmd in (["gate", "--baseline", str(base), "--candidate", str(base)], ["compare", str(base), str(base)]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert "are the same run (base)" in err and "\n" not in err
    store_run(f.make_run("only1", f.noisy(1e-3, 10, 5), created="2026-01-05T00:00:00Z"), db)
    assert main(["compare", "only1", str(base).replace(str(base), "only1")]) == 2
    assert "same run" in capsys.readouterr().err


def test_branch_at_gpu_is_never_the_candidate(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _history(db, 3)  # hist00 .. hist02 on main
    assert main(["compare", "main@H100", "main@H100", "--format", "json"]) == 0
    out = _json_out(capsys)
    assert out["candidate"]["run_id"] == "hist02" and out["baseline"]["run_id"] == "hist01"
    assert main(["compare", "main@H100", "hist01", "--format", "json"]) == 0
    assert _json_out(capsys)["baseline"]["run_id"] == "hist02"
    store_run(f.make_run("feat1", f.noisy(1e-3, 10, 7), branch="feature", commit="f1",
                         created="2026-02-02T00:00:00Z"), db)
    assert main(["gate", "--baseline", "feature@H100", "--candidate", "feat1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the only stored run of branch 'feature'" in err and "is the candidate (feat1)" in err


def test_tables_fit_80_columns(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _history(db)
    slow = _run_dir(tmp_path, "slow", 1.15e-3, 3, commit="bad0001")
    for cmd in (["compare", "main@H100", str(slow)], ["history", f"{KEY}:time_s"]):
        assert main(cmd) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines and max(len(line) for line in lines) <= 80, lines
    assert main(["compare", "main@H100", str(slow)]) == 0
    out = capsys.readouterr().out
    assert "regressed  mm" in out and KEY not in out  # the short label; the key is in the JSON


def test_history_options_default_to_the_detector_options() -> None:
    import argparse

    from perfkit.commands import history
    from perfkit.regression.changepoint.options import ChangePointOptions

    sub = argparse.ArgumentParser().add_subparsers()
    args = history.add_parser(sub).parse_args(["m"])
    d = ChangePointOptions()
    assert (args.max_p, args.min_magnitude, args.min_size, args.seed) == (d.max_p, d.min_magnitude, d.min_size, d.seed)
