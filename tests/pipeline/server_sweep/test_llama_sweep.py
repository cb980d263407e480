"""Opt-in: `perfkit serve-sweep` starts a real llama.cpp `llama-server` per configuration (its
parallel slots as the grid), benches each, stops it and draws the front; the runs carry the
server's command line, start-up time and version, and the stages are VALID (every request
completed with the tokens asked for: `ignore_eos` honoured by the server).

Runs only where $PERFKIT_LLAMA_SERVER names a built binary (scripts/build-llama-server.sh;
docs/serving-llama.md): `PERFKIT_LLAMA_SERVER=... pytest -m llama`. Traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from perfkit.workloads.serving.tiny_gguf import write_tiny_gguf
from tests.helpers.serving_server import refused

pytestmark = [pytest.mark.llama, pytest.mark.slow]  # a real server started twice: tens of seconds

SLOTS = (1, 4)


def _spec(tmp_path: Path, model: Path) -> Path:
    server = {"command": [os.environ.get("PERFKIT_LLAMA_SERVER", "llama-server"), "-m", str(model),
                          "--host", "127.0.0.1", "--port", "{port}", "-c", "1024", "-np", "{slots}"],
              "grid": {"slots": list(SLOTS)}, "ready_url": "/health", "start_timeout_s": 120,
              "reset_cache_url": "/slots?action=erase"}
    w = {"kind": "serving", "name": "llama", "load": {"concurrency": [1, 4]}, "requests": 12, "warmup": 1,
         "prompts": {"input_len": 16, "output_len": 12}, "server": server,
         "price": {"usd_per_gpu_hour": 2.99, "gpus": 1}}
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps({"name": "llama-slots", "workloads": [w]}))  # JSON is YAML
    return path


def test_a_sweep_of_llama_server_slots_runs_unattended_and_draws_its_front(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("gguf")
    spec = _spec(tmp_path, write_tiny_gguf(tmp_path / "tiny.gguf"))
    out = tmp_path / "sweep"
    db = f"sqlite:///{tmp_path / 'store.db'}"
    code = main(["serve-sweep", str(spec), "--out", str(out), "--db", db, "--wide"])
    text = capsys.readouterr().out
    state = json.loads((out / "sweep.json").read_text())
    assert code == 0, (text, state)
    assert [c["status"] for c in state["configs"]] == ["done", "done"]
    for c, slots in zip(state["configs"], SLOTS, strict=True):
        launch = c["launch"]
        assert f"-np {slots}" in launch["command"] and launch["start_time_s"] > 0
        assert launch["stopped"].startswith("exited") and refused(launch["endpoint"])
        run = json.loads((Path(c["runs"][0]["run_dir"]) / "run.json").read_text())
        stages = [p for p in run["points"] if p["status"] == "ok" and "concurrency" in p["params"]]
        assert len(stages) == 2, [p["key"] for p in run["points"]]
        for p in stages:
            m = p["metrics"]
            # every request finished with the 12 tokens asked for (ignore_eos), counted from usage
            assert m["validity"] == "VALID" or m.get("client_bound"), (p["key"], m.get("validity_reasons"))
            assert m["requests_ok"] == 12 and m["requests_failed"] == 0, p["key"]
            assert round(m["output_tok_per_s"] * m["duration_s"]) == 12 * 12, p["key"]
            # the random model's byte tokens often end mid-character: llama.cpp holds them back and
            # sends several in one chunk (the last one carries what usage counted beyond the chunks)
            assert 0 < m["ttft_p50_s"] < 5 and 0 <= m["tpot_p50_s"] < 1
    front = {(r["config"], r["stage"]): r["pareto"] for r in state["front"]}
    # every stage that measured the server is on the drawing (a client-bound one is left out of it)
    assert set(front) <= {(f"slots={n}", f"concurrency={c}") for n in SLOTS for c in (1, 4)}
    assert front and any(front.values()), state["front"]
    assert "Pareto-optimal" in text and "slots=4" in text
