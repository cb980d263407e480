"""CSV ingest: the stable header, grouping rows into runs and samples, and every bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.core.errors import StoreError
from perfkit.ingest.csv_table import parse_csv
from perfkit.store.api import open_store
from perfkit.store.read import count_rows, metric_history
from perfkit.store.write import write_runs

HEADER = "commit,metric,value,unit,direction,gpu,timestamp\n"


def _write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    p = tmp_path / "results.csv"
    p.write_text(header + body)
    return p


def test_rows_become_runs_and_samples(tmp_path: Path) -> None:
    p = _write(tmp_path, (
        "b2,decode:tok_per_s,101.5,tok/s,higher,H100,2026-01-02T10:00:00Z\n"
        "a1,decode:tok_per_s,100.0,tok/s,higher,H100,2026-01-01T10:00:00Z\n"
        "a1,decode:tok_per_s,100.4,tok/s,higher,H100,2026-01-01T10:00:05Z\n"
        "a1,prefill:ttft_s,0.031,s,lower,H100,1767261600\n"
        "a1,decode:tok_per_s,80.0,tok/s,higher,L4,2026-01-01T11:00:00Z\n"
    ))
    runs = parse_csv(p, branch="main")
    assert [(r.commit, r.gpu) for r in runs] == [("a1", "H100"), ("a1", "L4"), ("b2", "H100")]  # time order
    a1 = runs[0]
    by_name = {m.name: m for m in a1.metrics}
    assert by_name["decode:tok_per_s"].samples == (100.0, 100.4)
    assert by_name["decode:tok_per_s"].direction == "higher" and by_name["decode:tok_per_s"].unit == "tok/s"
    assert by_name["prefill:ttft_s"].samples == (0.031,)
    assert a1.branch == "main" and a1.created == "2026-01-01T10:00:00+00:00"
    assert parse_csv(p, branch="main")[0].run_id == a1.run_id  # deterministic ids: re-ingest is a no-op


def test_ingested_rows_make_a_history(tmp_path: Path) -> None:
    rows = "".join(f"c{i:02d},m,{1.0 + (0.1 if i >= 5 else 0.0) + j * 0.001},s,lower,cpu,"
                   f"2026-01-{i + 1:02d}T00:00:0{j}Z\n" for i in range(10) for j in range(3))
    runs = parse_csv(_write(tmp_path, rows))
    engine = open_store(f"sqlite:///{tmp_path / 's.db'}")
    assert write_runs(engine, runs) == [True] * 10
    assert write_runs(engine, runs) == [False] * 10
    with engine.connect() as conn:
        hist = metric_history(conn, "m", gpu="cpu")
        assert count_rows(conn)["samples"] == 30
    engine.dispose()
    assert [h.commit for h in hist] == [f"c{i:02d}" for i in range(10)]
    assert hist[7].samples == (1.1, 1.101, 1.102)


def test_optional_branch_column(tmp_path: Path) -> None:
    p = _write(tmp_path, "a1,m,1.0,s,lower,cpu,2026-01-01,dev\n", header=HEADER.strip() + ",branch\n")
    assert parse_csv(p, branch="main")[0].branch == "dev"


@pytest.mark.parametrize(
    ("header", "body", "where", "what"),
    [
        ("", "", ":1:", "empty file"),
        ("commit,metric,value,unit,direction,gpu\n", "a,m,1,s,lower,x\n", ":1:", "lacks timestamp"),
        (HEADER.strip() + ",extra\n", "a,m,1,s,lower,x,2026-01-01,y\n", ":1:8:", "unknown column 'extra'"),
        (HEADER, "", ":2:", "no data rows"),
        (HEADER, "a,m,fast,s,lower,x,2026-01-01\n", ":2:3:", "not a number"),
        (HEADER, "a,m,nan,s,lower,x,2026-01-01\n", ":2:3:", "not finite"),
        (HEADER, "a,m,1,s,smaller,x,2026-01-01\n", ":2:5:", "use lower or higher"),
        (HEADER, "a,m,1,s,lower,x,yesterday\n", ":2:7:", "not ISO 8601"),
        (HEADER, ",m,1,s,lower,x,2026-01-01\n", ":2:1:", "empty commit"),
        (HEADER, "a,m,1,s,lower\n", ":2:", "5 fields"),
        (HEADER, "a,m,1,s,lower,x,2026-01-01\nb,m,1,ms,lower,x,2026-01-02\n", ":3:4:", "on line 2"),
    ],
)
def test_bad_inputs_name_file_line_and_column(tmp_path: Path, header: str, body: str, where: str, what: str) -> None:
    p = _write(tmp_path, body, header=header)
    with pytest.raises(StoreError) as err:
        parse_csv(p)
    msg = str(err.value)
    assert f"{p}{where}" in msg and what in msg and "\n" not in msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot read"):
        parse_csv(tmp_path / "nope.csv")


@pytest.mark.parametrize(
    ("body", "where", "what"),
    [
        ('a1,"dec\node",1.0,s,lower,cpu,2026-01-01\n', ":2:2:", r"metric 'dec\node' holds the control character '\n'"),
        ('a1,"dec\r\node",1.0,s,lower,cpu,2026-01-01\n', ":2:2:", "control character"),
        ('a1,m,1.0,s,lower,"H1\x0000",2026-01-01\n', ":2:6:", "control character '\\x00'"),
        ('a1,m,1.0,"m\ts",lower,cpu,2026-01-01\n', ":2:4:", "unit 'm\\ts'"),
        ('"a\n1",m,1.0,s,lower,cpu,2026-01-01\n', ":2:1:", "commit"),
        # the row after a multi-line one is named by the line it starts on
        ('a1,m,1.0,s,lower,cpu,2026-01-01\nb2,"x\ny",1.0,s,lower,cpu,2026-01-01\n', ":3:2:", "metric"),
        ('a1,m,1.0,s,lower,cpu,2026-01-01\n"b2\n\n",m,oops,s,lower,cpu,2026-01-01\n', ":3:3:", "not a number"),
    ],
)
def test_control_characters_refuse_the_file_at_the_row(tmp_path: Path, body: str, where: str, what: str) -> None:
    p = tmp_path / "results.csv"
    p.write_bytes((HEADER + body).encode())  # bytes: the newlines as written, never translated
    with pytest.raises(StoreError) as err:
        parse_csv(p)
    msg = str(err.value)
    assert f"{p}{where}" in msg and what in msg and "\n" not in msg and "\r" not in msg


def test_a_file_with_one_bad_row_stores_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfkit.cli import main

    p = tmp_path / "results.csv"
    p.write_text(HEADER + "a1,m,1.0,s,lower,cpu,2026-01-01\n" + 'b2,"de\ncode",1.0,s,lower,cpu,2026-01-02\n')
    db = tmp_path / "store.db"
    assert main(["ingest", "--format", "csv", str(p), "--db", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{p}:3:2:" in err and "Traceback" not in err
    if db.exists():  # the store may be created, but holds no run
        engine = open_store(f"sqlite:///{db}")
        with engine.connect() as conn:
            assert count_rows(conn)["samples"] == 0
        engine.dispose()
