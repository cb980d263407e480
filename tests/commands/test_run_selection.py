"""Run selection through the CLI (compare / gate / report --vs): BRANCH@GPU is the latest run
of the candidate's spec, BRANCH@GPU:SPEC another spec, a commit selects its run (ingested CSV
runs too); a search that finds nothing names what it searched and the closest runs; runs with
nothing in common are an error (exit 2, one line), never an empty comparison."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.core.atomic import write_json_atomic
from perfkit.core.codec import to_builtins
from perfkit.store.api import store_run
from tests.store import factory as f

TINY = """\
name: {name}
device: cpu
seed: 0
cpu_threads: 1
timing: {{warmup_s: 0.002, budget_s: 0.02, min_reps: 5, target_rel_ci: 0.2}}
profile: {{torch_profiler: false, nvtx: false}}
workloads:
{workload}
"""
KERNELS = "  - {kind: kernels, name: norms, op: rmsnorm, tokens: 1, hidden: 64, dtypes: [fp32]}"
GEMM = "  - {kind: gemm, name: sq, m: 16, n: 16, k: 16, dtypes: [fp32]}"


def _err_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    return err


def _git_repo(path: Path) -> Path:
    path.mkdir()
    for cmd in (["init", "-q", "-b", "main"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                                 "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True, capture_output=True)
    return path


def _profile(tmp_path: Path, name: str, workload: str, repo: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(TINY.format(name=name, workload=workload))
    assert main(["profile", str(spec), "--out", str(tmp_path / "runs"), "--quiet", "--no-analyze",
                 "--repo", str(repo)]) == 0
    return Path(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_specs_on_one_branch(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """kernels then gemm profiled on main: `compare main@GPU RUN` of a new kernels run picks the
    kernels run, not the latest (gemm) one; `main@GPU:tiny-gemm` names the gemm run, which has
    nothing in common with it: exit 2 in compare, gate and report --vs."""
    repo = _git_repo(tmp_path / "repo")
    kern1 = _profile(tmp_path, "tiny-kernels", KERNELS, repo, capsys)
    gemm1 = _profile(tmp_path, "tiny-gemm", GEMM, repo, capsys)
    kern2 = _profile(tmp_path, "tiny-kernels", KERNELS, repo, capsys)
    gpu = json.loads((kern2 / "run.json").read_text())["env"]["cpu"]["model"] or "cpu"
    assert main(["compare", f"main@{gpu}", str(kern2), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["baseline"]["run_id"] == kern1.name and out["baseline"]["spec"] == "tiny-kernels"
    assert out["rows"] and out["baseline"]["spec_hash"] == out["candidate"]["spec_hash"] != ""
    other = f"main@{gpu}:tiny-gemm"
    for cmd in (["compare", other, str(kern2)], ["gate", "--baseline", other, "--candidate", str(kern2)],
                ["report", str(kern2), "--vs", other, "--format", "md"]):
        assert main(cmd) == 2, cmd
        err = _err_line(capsys)
        assert f"run {gemm1.name}, spec 'tiny-gemm'" in err and f"run {kern2.name}, spec 'tiny-kernels'" in err
        assert "no point key in common" in err and "perfkit runs" in err


def _stored(run_id: str, spec: str, day: int, spec_hash: str = "", **kw: Any) -> Any:
    run = f.make_run(run_id, f.noisy(1e-3, 10, day), created=f"2026-01-{day:02d}T00:00:00Z", **kw)
    return replace(run, spec={"name": spec}, spec_hash=spec_hash or f"hash-{spec}")


def _run_dir(tmp_path: Path, run: Any) -> Path:
    d = tmp_path / run.run_id
    write_json_atomic(d / "run.json", to_builtins(run))
    return d


@pytest.mark.slow
def test_spec_selects_the_baseline_and_a_changed_hash_is_noted(tmp_path: Path, db: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store_run(_stored("k1", "kernels", 1, commit="1111aaaa"), db)
    store_run(_stored("g1", "gemm", 2, commit="1111aaaa"), db)  # the branch's latest run: another spec
    cand = _run_dir(tmp_path, _stored("k2", "kernels", 3, spec_hash="hash-new", commit="2222bbbb"))
    assert main(["compare", "main@H100", str(cand), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["baseline"]["run_id"] == "k1"
    assert "spec 'kernels' changed between the runs (hash hash-kernels in baseline k1, hash-new" in captured.err
    assert main(["compare", "main@H100:gemm", str(cand), "--format", "json"]) == 0  # the same point keys
    assert json.loads(capsys.readouterr().out)["baseline"]["run_id"] == "g1"
    assert main(["compare", "1111aaaa", str(cand), "--format", "json"]) == 0  # a commit: of the candidate's spec
    assert json.loads(capsys.readouterr().out)["baseline"]["run_id"] == "k1"
    assert main(["compare", "1111", "k2", "--format", "json"]) == 2  # k2 is a run directory, not stored
    assert "'k2': no run directory, stored run id or commit" in _err_line(capsys)
    assert main(["compare", "k1", "1111aaaa"]) == 2  # a commit with runs of two specs, no reference
    assert "runs of several specs or GPUs (g1 (spec 'gemm'" in _err_line(capsys)


def test_not_found_names_the_search_and_the_closest_runs(tmp_path: Path, db: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    store_run(_stored("k1", "kernels", 1), db)
    store_run(_stored("m1", "moe", 2), db)
    cand = _run_dir(tmp_path, _stored("d1", "decode", 3))
    assert main(["gate", "--baseline", "main@H100", "--candidate", str(cand)]) == 2
    err = _err_line(capsys)
    assert "no stored run of branch 'main' on a GPU matching 'H100' of spec 'decode'" in err
    assert db in err and "perfkit runs" in err and "BRANCH@GPU:SPEC" in err
    assert "closest: m1 (main@NVIDIA H100 80GB HBM3, spec 'moe'), k1 (" in err
    assert main(["compare", "main@L4:kernels", str(cand)]) == 2
    assert "closest: k1 (main@NVIDIA H100 80GB HBM3, spec 'kernels')" in _err_line(capsys)
    assert main(["compare", "nosuchrun", str(cand)]) == 2
    err = _err_line(capsys)
    assert "no run directory, stored run id or commit" in err and "perfkit runs" in err
    assert main(["compare", "main@H100:", str(cand)]) == 2
    assert "needs a spec name" in _err_line(capsys)


def test_commit_selects_an_ingested_csv_run(tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["commit,metric,value,unit,direction,gpu,timestamp,branch"]
    for i, (commit, level) in enumerate((("1111aaaa", 100.0), ("2222bbbb", 80.0))):
        lines += [f"{commit},decode:tok_per_s,{level + j * 0.1},tok/s,higher,H100,2026-03-0{i + 1}T00:00:0{j}Z,main"
                  for j in range(5)]
    csv_file = tmp_path / "bench.csv"
    csv_file.write_text("\n".join(lines) + "\n")
    assert main(["ingest", "--format", "csv", str(csv_file)]) == 0
    capsys.readouterr()
    assert main(["compare", "1111aaaa", "2222", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["baseline"]["commit"], out["candidate"]["commit"]) == ("1111aaaa", "2222bbbb")
    assert out["baseline"]["run_id"].startswith("csv-") and out["rows"][0]["metric"] == "decode:tok_per_s"
    assert main(["compare", "main@H100", "2222bbbb", "--format", "json"]) == 0  # unnamed spec: the CSV runs
    assert json.loads(capsys.readouterr().out)["baseline"]["commit"] == "1111aaaa"
    assert main(["gate", "--baseline", "1111aaaa", "--candidate", "2222bbbb", "--format", "json"]) == 1  # 20% fewer tok/s
    capsys.readouterr()
    assert main(["compare", "2222bbbb", "2222bbbb"]) == 2
    assert "its only stored run is the candidate" in _err_line(capsys)
