"""`perfkit serve-sweep` against real servers started through the server block: `perfkit serve
--synthetic` with a grid parameter and `perfkit serve --model tiny`; resume after a SIGKILL,
dry-run, a server that exits at start or is never ready, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.store.read import load_run
from perfkit.store.read_only import open_read_only
from perfkit.store.run_list import run_listing
from perfkit.workloads.serving.measurements.sweep_runs import stored_sweeps
from tests.helpers.serving_server import REPO, refused

PY = sys.executable
SERVE = [PY, "-m", "perfkit", "serve"]


def _spec(tmp_path: Path, server: dict[str, Any], **workload: Any) -> Path:
    w = {"kind": "serving", "name": "chat", "load": {"concurrency": [1, 4]}, "requests": 6, "warmup": 0,
         "prompts": {"input_len": 8, "output_len": 6}, "server": {"start_timeout_s": 60, **server}, **workload}
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps({"name": "sw", "workloads": [w]}))  # JSON is YAML
    return path


def _env() -> None:
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)


def _state(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "sweep.json").read_text()))


@pytest.mark.slow
def test_three_synthetic_configurations_unattended_with_the_front(tmp_path: Path, capsys: Any) -> None:
    _env()
    spec = _spec(tmp_path, {"command": [*SERVE, "--synthetic", "--ttft-ms", "5", "--itl-ms", "{itl_ms}",
                                        "--port", "{port}"],
                            "grid": {"itl_ms": [2, 4, 8]}, "reset_cache_url": "/reset_prefix_cache"})
    out = tmp_path / "sweep"
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert main(["serve-sweep", str(spec), "--out", str(out), "--db", db, "--wide"]) == 0
    state = _state(out)
    assert [c["status"] for c in state["configs"]] == ["done"] * 3
    # the stored runs alone draw the same front (the dashboard's Serving page reads them)
    with open_read_only(db).connect() as conn:
        stored = [load_run(conn, r.run_id) for r in run_listing(conn)]
    (sweep,) = stored_sweeps(stored, "chat")
    assert sweep.sweep_id == state["sweep_id"] and state["sweep_id"].startswith("sw@")
    assert [r.as_dict() for r in sweep.front] == state["front"] and list(sweep.notes) == state["front_notes"]
    assert [c.name for c in sweep.configs] == ["itl_ms=2", "itl_ms=4", "itl_ms=8"]
    for c, itl in zip(state["configs"], (2, 4, 8), strict=True):
        launch = c["launch"]
        assert f"--itl-ms {itl} " in launch["command"] and launch["start_time_s"] > 0
        assert launch["version"] == "owned_by perfkit" and launch["stopped"] == "exited 0"
        assert launch["notes"] == [f"cache reset: POST {launch['endpoint']}/reset_prefix_cache answered 404"]
        assert refused(launch["endpoint"])  # stopped
        run = json.loads((Path(c["runs"][0]["run_dir"]) / "run.json").read_text())
        assert run["spec"]["workloads"][0]["server"]["grid"] == {"itl_ms": [itl]}
        assert all(p["metrics"]["server_launch"]["command"] == launch["command"] for p in run["points"])
    front = {(r["config"], r["stage"]): r["pareto"] for r in state["front"]}
    assert len(front) == 6
    assert not front[("itl_ms=8", "concurrency=1")] and not front[("itl_ms=8", "concurrency=4")]  # slower in both
    assert front[("itl_ms=2", "concurrency=4")]
    text = capsys.readouterr().out
    assert "Pareto-optimal" in text and "itl_ms=8" in text
    assert "Pareto front" in (out / "front.html").read_text()


@pytest.mark.slow
def test_tiny_model_sweep_killed_after_the_first_configuration_resumes(tmp_path: Path) -> None:
    """Three configurations of `perfkit serve --model tiny`; perfkit itself SIGKILLed once the
    first is recorded; --resume keeps it and runs the other two; the front is drawn."""
    _env()
    spec = _spec(tmp_path, {"command": [*SERVE, "--model", "tiny", "--max-batch", "{max_batch}", "--port", "{port}"],
                            "grid": {"max_batch": [1, 2, 4]}},
                 load={"concurrency": [1, 2]}, requests=4, prompts={"input_len": 8, "output_len": 4})
    out = tmp_path / "sweep"
    proc = subprocess.Popen([PY, "-m", "perfkit", "serve-sweep", str(spec), "--out", str(out), "--no-store",
                             "--quiet"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "sweep.json").exists() and _state(out)["configs"][0]["status"] == "done":
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = _state(out)["configs"]
    assert first[0]["status"] == "done" and first[2]["status"] == "pending"
    assert main(["serve-sweep", str(spec), "--out", str(out), "--no-store", "--resume", "--quiet"]) == 0
    state = _state(out)
    assert [c["status"] for c in state["configs"]] == ["done"] * 3
    assert state["configs"][0]["runs"] == first[0]["runs"]  # kept, not run again
    assert len({r["config"] for r in state["front"]}) == 3 and any(r["pareto"] for r in state["front"])
    assert any(not r["pareto"] for r in state["front"])


@pytest.mark.slow
def test_a_server_that_exits_at_start_is_recorded_and_the_sweep_goes_on(tmp_path: Path, capsys: Any) -> None:
    _env()
    spec = _spec(tmp_path, {"command": [*SERVE, "--synthetic", "--itl-ms", "{itl}", "--port", "{port}"],
                            "grid": {"itl": ["bad", 2]}}, load={"concurrency": [2]}, requests=4)
    out = tmp_path / "sweep"
    assert main(["serve-sweep", str(spec), "--out", str(out), "--no-store"]) == 3
    bad, good = _state(out)["configs"]
    assert bad["status"] == "failed" and "exited with 2 before it was ready" in bad["error"]
    assert "--itl-ms" in bad["log_tail"]  # the server's own complaint
    assert good["status"] == "done" and good["stages"][0]["ok"]
    assert "1 of 2 configurations failed: itl=bad" in capsys.readouterr().err


@pytest.mark.slow
def test_a_server_never_ready_is_stopped_and_recorded(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"command": [PY, "-c", "import time, sys; time.sleep(60)", "{port}"],
                            "start_timeout_s": 1, "stop_timeout_s": 5})
    out = tmp_path / "sweep"
    t0 = time.monotonic()
    assert main(["serve-sweep", str(spec), "--out", str(out), "--no-store", "--quiet"]) == 3
    (c,) = _state(out)["configs"]
    assert c["status"] == "failed" and "not ready after 1 s" in c["error"] and "start_timeout_s" in c["error"]
    assert c["launch"]["stopped"] == "exited -15" and time.monotonic() - t0 < 20


def test_dry_run_prints_the_commands_and_starts_nothing(tmp_path: Path, capsys: Any) -> None:
    marker = tmp_path / "started"
    spec = _spec(tmp_path, {"command": [PY, "-c", f"open({str(marker)!r}, 'w')", "{port}", "{n}"],
                            "env": {"N": "{n}"}, "grid": {"n": [1, 2]}})
    assert main(["serve-sweep", str(spec), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1  n=1: N=1 " in out and "2  n=2: N=2 " in out and "nothing started" in out
    assert not marker.exists() and not (REPO / "runs" / "sweep-sw").exists()


@pytest.mark.parametrize(("server", "words"), [
    ({"grid": {"n": [1]}}, "missing required key 'command'"),
    ({"command": "srv --port {port} --n {n}", "grid": {"n": "x", "m": [1]}}, "grid.m appears nowhere"),
    ({"command": "srv --port {port}", "start_timeout_s": 0}, "start_timeout_s"),
])
def test_bad_server_blocks_are_one_line_exit_2(tmp_path: Path, capsys: Any, server: dict[str, Any],
                                               words: str) -> None:
    spec = _spec(tmp_path, server)
    spec.write_text(json.dumps(json.loads(spec.read_text()), indent=1))  # lines to point at
    assert main(["serve-sweep", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"perfkit: error: {spec}:") and words in err


def test_a_spec_without_a_server_block_and_a_second_sweep_in_one_directory(tmp_path: Path, capsys: Any) -> None:
    spec = tmp_path / "plain.yaml"
    spec.write_text(json.dumps({"name": "p", "workloads": [{"kind": "serving", "name": "c",
                                                            "endpoint": "http://127.0.0.1:9"}]}))
    assert main(["serve-sweep", str(spec), "--dry-run"]) == 2
    assert "serve-sweep runs one `kind: serving` workload with a server block" in capsys.readouterr().err
    spec = _spec(tmp_path, {"command": "srv --port {port}"})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sweep.json").write_text(json.dumps({"spec_hash": "other", "configs": []}))
    assert main(["serve-sweep", str(spec), "--out", str(tmp_path / "out"), "--no-store"]) == 2
    assert "holds a sweep already; --resume" in capsys.readouterr().err
    assert main(["serve-sweep", str(spec), "--out", str(tmp_path / "out"), "--no-store", "--resume"]) == 2
    assert "a sweep of another spec" in capsys.readouterr().err
