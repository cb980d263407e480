"""Inputs of `perfkit analyze` that are not what they claim, through the CLI: a directory where an
nsys export (.sqlite) or report (.nsys-rep) is expected ("is a directory", not "no such file"), an
nsys export with a hot rollback journal beside it (the export is not finished), and rank files
whose `distributedInfo.rank` is missing in some of them, text, or not a rank at all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perfkit.cli import main
from tests.analyzers.conftest import KinetoTrace

NSYS = Path(__file__).resolve().parents[1] / "data" / "nsys" / "nsys_ai" / "rtx3080_tiny.sqlite"


def _analyze(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main(["analyze", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err.strip().splitlines()


@pytest.mark.parametrize(("name", "fix"), [("x.sqlite", "nsys export --type sqlite"),
                                           ("x.nsys-rep", "the .nsys-rep file nsys profile wrote")])
def test_a_directory_where_an_nsys_file_belongs_is_named_a_directory(
        name: str, fix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / name).mkdir()
    rc, out, err = _analyze(capsys, str(tmp_path / name))
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {tmp_path / name}: is a directory, not a file;") and fix in err[0], err
    rc, _, err = _analyze(capsys, str(tmp_path / "missing.sqlite"))
    assert rc == 2 and err[0].endswith("missing.sqlite: no such file; check the path"), err


HOT = r'''
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA journal_mode=DELETE")
c.execute("PRAGMA cache_size=1")  # pages spill into the database before the commit
c.execute("BEGIN")
for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
    c.execute(f'DELETE FROM "{t}"')
os._exit(0)  # the writer dies mid-transaction: the journal beside the file is hot
'''


@pytest.mark.slow
def test_an_export_with_a_hot_journal_beside_it_is_not_finished(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "run.sqlite"
    shutil.copy(NSYS, export)
    subprocess.run([sys.executable, "-c", HOT, str(export)], check=True, timeout=60)
    journal = tmp_path / "run.sqlite-journal"
    assert journal.stat().st_size > 0
    before = export.read_bytes()
    rc, out, err = _analyze(capsys, str(export))
    assert rc == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith(f"perfkit: error: {export}: the export is not finished (run.sqlite-journal beside it"), err
    assert "export it again" in err[0]
    assert export.read_bytes() == before and journal.exists()  # read-only: nothing rolled back or written
    journal.unlink()  # without the journal: the export (half-deleted) is read or refused, never a traceback
    rc, _, err = _analyze(capsys, str(export))
    assert rc in (0, 2)


def _rank_file(path: Path, dist: dict[str, Any] | None) -> Path:
    trace = KinetoTrace()
    if dist is not None:
        trace.meta["distributedInfo"] = {"backend": "nccl", "world_size": 2, **dist}
    trace.kernel("gemm", 10, 5, 20, 30)
    return trace.write(path)


Make = Callable[[Path], list[Path]]
RANK_CASES: list[tuple[str, Make, int, str]] = [
    ("one-without-rank", lambda p: [_rank_file(p / "r0.json", {"rank": 0}), _rank_file(p / "r1.json", {})],
     2, "r1.json: no distributedInfo.rank, while "),
    ("one-without-distributed-info", lambda p: [_rank_file(p / "r0.json", {"rank": 0}), _rank_file(p / "r1.json", None)],
     2, "r1.json: no distributedInfo.rank, while "),
    ("rank-is-a-word", lambda p: [_rank_file(p / "r0.json", {"rank": 0}), _rank_file(p / "r1.json", {"rank": "one"})],
     2, "r1.json: distributedInfo.rank is 'one', not a rank (an integer 0 to 2^31 - 1), while "),
    ("rank-is-negative", lambda p: [_rank_file(p / "r0.json", {"rank": 0}), _rank_file(p / "r1.json", {"rank": -1})],
     2, "distributedInfo.rank is -1, not a rank"),
    ("rank-is-a-list", lambda p: [_rank_file(p / "r0.json", {"rank": 0}), _rank_file(p / "r1.json", {"rank": [1]})],
     2, "distributedInfo.rank is a list, not a rank"),
]


@pytest.mark.parametrize(("make", "rc_want", "needle"), [(m, r, n) for _, m, r, n in RANK_CASES],
                         ids=[c[0] for c in RANK_CASES])
def test_rank_files_that_do_not_name_their_rank(make: Make, rc_want: int, needle: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    files = make(tmp_path)
    rc, out, err = _analyze(capsys, *map(str, files))
    assert rc == rc_want and out == "" and len(err) == 1, err
    assert needle in err[0] and "names rank 0" in err[0] and "distributedInfo.rank in every rank's file" in err[0], err


def test_a_rank_given_as_text_is_read_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [_rank_file(tmp_path / "r0.json", {"rank": "1"}), _rank_file(tmp_path / "r1.json", {"rank": 0})]
    rc, out, err = _analyze(capsys, *map(str, files), "--format", "json")
    assert rc == 0, err
    said = json.dumps(json.loads(out)) + " ".join(err)
    assert "distributedInfo.rank is the text '1', read as rank 1" in said, said[:2000]
    # the same two files, each naming a rank: the text one is rank 1, so no clash with rank 0
    rc, _, err = _analyze(capsys, str(files[0]), str(files[0].with_name("r1.json")))
    assert rc == 0, err


def test_files_that_all_lack_a_rank_take_their_place_in_the_list(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    files = [_rank_file(tmp_path / "a.json", {}), _rank_file(tmp_path / "b.json", None)]
    rc, out, err = _analyze(capsys, *map(str, files))
    assert rc == 0 and "rank" in out, (out, err)
