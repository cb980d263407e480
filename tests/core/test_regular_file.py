"""Inputs that never end or wait forever are refused; a pipe the shell hands over is read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit.core.regular_file import special_kind

CSV = "commit,metric,value,unit,direction,gpu,timestamp\nabc,m,1.0,s,lower,G,2026-01-01T00:00:00\n"


def test_a_fifo_without_a_writer_and_a_device_are_special(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    assert special_kind(fifo) == "a named pipe (FIFO)"
    assert special_kind("/dev/zero") == "a device"
    assert special_kind(tmp_path / "missing") is None


def test_a_pipe_given_as_dev_stdin_or_fd_is_read_like_a_file(tmp_path: Path) -> None:
    r, w = os.pipe()
    try:
        assert special_kind(f"/dev/fd/{r}") is None and special_kind(f"/proc/self/fd/{r}") is None
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.slow
def test_ingest_reads_a_csv_piped_to_dev_stdin(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    proc = subprocess.run([sys.executable, "-m", "perfkit", "ingest", "--format", "csv", "/dev/stdin", "--db", str(db)],
                          input=CSV, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "stored" in proc.stdout and db.exists()
