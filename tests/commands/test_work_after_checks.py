"""Expensive work only after the checks, and output trouble never turned into a wrong error,
through the real CLI: `perfkit calibrate` checks where it will store before measuring; a closed
standard output (`>&-`, a pipe whose reader is gone) neither loses stored runs nor blames the
disk."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]
CSV = ("commit,metric,value,unit,direction,gpu,timestamp,branch\n"
       "c1,m,1.0,s,lower,g,1700000000,main\nc2,m,1.2,s,lower,g,1700000100,main\n")

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, **extra}


def _stored(db: Path) -> int:
    from perfkit.store.api import open_existing_store
    from perfkit.store.read import count_runs

    engine = open_existing_store(str(db))
    assert engine is not None
    with engine.connect() as conn:
        n = count_runs(conn)
    engine.dispose()
    return n


@pytest.mark.parametrize("home", ["a-file/sub", "a-file"])
def test_calibrate_checks_its_output_folder_before_measuring(tmp_path: Path, home: str) -> None:
    (tmp_path / "a-file").write_text("")
    start = time.monotonic()
    proc = run_perfkit(["calibrate", "--device", "cpu", "--quiet"], tmp_path, _env(PERFKIT_HOME=str(tmp_path / home)),
                       timeout_s=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "cannot store a calibration there" in err and "PERFKIT_HOME" in err and "--no-save" in err
    assert proc.stdout == ""  # nothing measured
    assert time.monotonic() - start < 20  # a full calibration measures for tens of seconds


def _ingest(tmp_path: Path, stdout: int | None, shell_close: bool = False) -> subprocess.CompletedProcess[str]:
    (tmp_path / "d.csv").write_text(CSV)
    cmd = [sys.executable, "-m", "perfkit", "ingest", "--format", "csv", "d.csv", "--db", "s.db"]
    if shell_close:
        cmd = ["bash", "-c", 'exec "$@" >&-', "ingest", *cmd]
    return subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(),
                          timeout=120, check=False)


def test_ingest_with_stdout_closed_stores_the_runs_and_exits_0(tmp_path: Path) -> None:
    proc = _ingest(tmp_path, None, shell_close=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _stored(tmp_path / "s.db") == 2


def test_ingest_into_a_pipe_nobody_reads_stores_the_runs_and_exits_0(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before perfkit prints anything
    try:
        proc = _ingest(tmp_path, write_end)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "disk" not in proc.stderr and "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr
    assert _stored(tmp_path / "s.db") == 2


def test_a_reader_with_stdout_closed_is_no_traceback(tmp_path: Path) -> None:
    _ingest(tmp_path, subprocess.DEVNULL)
    proc = subprocess.run(["bash", "-c", 'exec "$@" >&-', "runs", sys.executable, "-m", "perfkit", "runs",
                           "--db", "s.db"], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120,
                          check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
