"""Every run says what it ran on: serve-bench (and ingest of a run directory) record `--gpu`,
`--branch`, `--commit`, `--label` or their PERFKIT_* variables, and `compare main@H100 RUN` finds
a labelled serve-bench run; a flag a format cannot record is an error; the model comes from the
server's /v1/models."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.record import load_run
from tests.helpers.serving_server import running_server

BENCH = ["--concurrency", "1", "--requests", "4", "--output-len", "4", "--name", "labelled", "--quiet"]


def _bench(url: str, tmp_path: Path, db: str, *extra: str) -> Path:
    before = set((tmp_path / "runs").glob("*"))
    assert main(["serve-bench", url, "--out", str(tmp_path / "runs"), "--db", db, *BENCH, *extra]) == 0
    (new,) = set((tmp_path / "runs").glob("*")) - before
    return new


@pytest.mark.slow
def test_a_labelled_serve_bench_run_is_found_by_branch_at_gpu(tmp_path: Path, db: str,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with running_server("--synthetic", "--ttft-ms", "5", "--itl-ms", "5", "--served-model-name", "llama-x") as url:
        base = _bench(url, tmp_path, db, "--gpu", "H100", "--branch", "main", "--commit", "aaa1111",
                      "--label", "nightly")
        monkeypatch.setenv("PERFKIT_GPU", "H100")  # what a CI job sets instead of flags
        monkeypatch.setenv("PERFKIT_BRANCH", "feature")
        cand = _bench(url, tmp_path, db)
    run = load_run(base / "run.json")
    assert run.env.label == "H100" and run.env.git.branch == "main" and run.env.git.commit == "aaa1111"
    assert run.env.run_label == "nightly"
    assert run.spec["workloads"][0]["model"] == "llama-x"  # asked of /v1/models
    capsys.readouterr()
    assert main(["compare", "main@H100", str(cand), "--db", db, "--format", "json", "--history", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["baseline"]["run_id"] == run.run_id and doc["baseline"]["label"] == "nightly"
    assert (doc["candidate"]["gpu"], doc["candidate"]["branch"]) == ("H100", "feature")
    assert main(["compare", "main@H100", str(cand), "--db", db, "--history", "0"]) == 0
    assert "branch main, label nightly" in capsys.readouterr().out

    # a run directory ingested elsewhere takes the flags (they were ignored before)
    monkeypatch.delenv("PERFKIT_GPU")
    monkeypatch.delenv("PERFKIT_BRANCH")
    other = f"sqlite:///{tmp_path / 'other.db'}"
    assert main(["ingest", str(cand), "--db", other, "--gpu", "A100", "--branch", "rel-1", "--label", "x"]) == 0
    assert "branch rel-1, A100" in capsys.readouterr().out
    assert main(["runs", "--db", other, "--gpu", "A100", "--branch", "rel-1"]) == 0
    assert cand.name in capsys.readouterr().out


def test_a_label_flag_a_format_cannot_record_is_an_error(tmp_path: Path, db: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text("commit,metric,value,unit,direction,gpu,timestamp\nabc,m,1.0,s,lower,H100,2026-01-01T00:00:00Z\n")
    assert main(["ingest", "--format", "csv", str(csv), "--gpu", "A100"]) == 2
    assert "--gpu: --format csv takes --branch only" in capsys.readouterr().err


class _TwoModels(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "m-a"}, {"id": "m-b"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def two_models() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TwoModels)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_with_several_models_needs_model(two_models: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve-bench", two_models, "--out", str(tmp_path), "--no-store", *BENCH]) == 2
    assert "serves 2 models (m-a, m-b); name one with --model" in capsys.readouterr().err
