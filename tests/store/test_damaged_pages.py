"""A SQLite store whose pages were damaged after it was written (a disk, a copy cut short): every
command that reads it answers in one line naming the store and what to do, exit 2, never a
traceback, and the file is left as it was (uncaught_store_error, perfkit.cli.run_command)."""

from __future__ import annotations

import csv
import hashlib
import os
import random
from pathlib import Path

import pytest

from perfkit.cli import main

PAGE = 4096


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("damaged")
    rng = random.Random(7)
    src = tmp / "h.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["commit", "metric", "value", "unit", "direction", "gpu", "timestamp"])
        for c in range(40):
            for m in range(20):
                for _ in range(5):
                    w.writerow([f"c{c:04d}", f"bench/m{m}:time_s", 1 + rng.random() * 0.01, "s", "lower", "H100",
                                f"2026-01-{1 + c // 2:02d}T{c % 24:02d}:00:00Z"])
    db = tmp / "s.db"
    assert main(["ingest", "--format", "csv", str(src), "--db", f"sqlite:///{db}"]) == 0
    data = bytearray(db.read_bytes())
    for page in range(3, len(data) // PAGE, 3):  # the header and the schema's first pages stay readable
        data[page * PAGE + 200: page * PAGE + 264] = rng.randbytes(64)
    db.write_bytes(bytes(data))
    return db


@pytest.mark.parametrize("argv", [
    ["history", "bench/m3:time_s"],
    ["gate", "--baseline", "c0001", "--candidate", "c0030", "--no-step-summary"],
    ["compare", "c0001", "c0030"],
    ["runs", "--limit", "100"],
])
def test_a_damaged_page_is_one_line_and_the_file_is_left_alone(damaged: Path, argv: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    before = hashlib.sha256(damaged.read_bytes()).hexdigest()
    code = main([*argv, "--db", f"sqlite:///{damaged}"])
    err = capsys.readouterr().err.strip()
    assert hashlib.sha256(damaged.read_bytes()).hexdigest() == before and not os.path.exists(f"{damaged}-wal")
    assert "Traceback" not in err
    if code == 2:
        assert len(err.splitlines()) == 1 and str(damaged) in err and "; " in err, err
    else:  # the pages this command read were intact
        assert code in (0, 1), (code, err)
