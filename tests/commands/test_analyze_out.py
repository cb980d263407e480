"""`perfkit analyze --out`: a file or an unwritable directory is refused in one line (exit 2)
before any trace is read; a missing directory is created."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from perfkit.cli import main
from tests.helpers.forked_cli import run_perfkit

REPO = Path(__file__).resolve().parents[2]


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}')
    return path


def _unwritable_dir(tmp_path: Path) -> Path:
    """A directory this process cannot create files in (a read-only one, or /sys for root)."""
    candidate = tmp_path / "ro"
    candidate.mkdir()
    candidate.chmod(0o500)
    for d in (candidate, Path("/sys"), Path("/proc/self")):
        try:
            fd, probe = tempfile.mkstemp(dir=d)
        except OSError:
            return d
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no unwritable directory on this machine")


def test_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(tmp_path / "missing.json"), "--out", str(afile)])  # no trace read first
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{afile} is a file" in err and "--out" in err
    assert afile.read_text() == "keep me"


def test_out_below_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(_trace(tmp_path)), "--out", str(afile / "sub")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file" in err


def test_out_unwritable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _unwritable_dir(tmp_path)
    try:
        with pytest.raises(SystemExit) as exc:
            main(["analyze", str(tmp_path / "missing.json"), "--out", str(target / "tables")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot write in {target}" in err
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_out_created_and_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new" / "tables"
    assert main(["analyze", str(_trace(tmp_path)), "--only", "ops,kernels", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["kernels.csv", "ops.csv"]  # no probe file left behind
    capsys.readouterr()


def test_out_file_through_the_real_cli(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    proc = run_perfkit(["analyze", str(_trace(tmp_path)), "--out", str(afile)], REPO, timeout_s=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
