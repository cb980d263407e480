"""`perfkit store export / import` through perfkit.cli.main: a store moved to a new file answers
`perfkit runs` and `perfkit gate` exactly as the original; every damaged export is one line,
exit 2, and the target store untouched."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from perfkit.cli import main
from tests.store.store_contents import fill_store, table_sums

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    tmp = tmp_path_factory.mktemp("store_cmd")
    source = f"sqlite:///{tmp / 'source.db'}"
    fill_store(source)
    assert main(["store", "export", str(tmp / "export"), "--db", source]) == 0
    return source, tmp / "export"


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_moved_store_answers_runs_and_gate_alike(export_dir: tuple[str, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    source, out = export_dir
    capsys.readouterr()
    target = str(tmp_path / "copy.db")
    code, text, _ = _out(capsys, "store", "import", str(out), "--db", target)
    assert code == 0 and text.startswith("imported 6 runs (") and "counts and checksums match" in text
    assert table_sums(f"sqlite:///{target}") == table_sums(source)
    for argv in (["runs", "--format", "json"],
                 ["gate", "--baseline", "run04", "--candidate", "run05", "--format", "json"],
                 ["history", "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:time_s", "--format", "json"]):
        before = _out(capsys, *argv, "--db", source)
        after = _out(capsys, *argv, "--db", target)
        assert after == before and before[1]
    gate = json.loads(_out(capsys, "gate", "--baseline", "run04", "--candidate", "run05", "--format", "json",
                           "--db", target)[1])
    assert gate["metrics"]  # the gate compared something (the last run is 20% slower)


def test_a_store_moved_into_clickhouse_and_out_again_is_the_same(export_dir: tuple[str, Path], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("chdb_sqlalchemy", reason="embedded ClickHouse needs pip install 'perfkit[clickhouse]'")
    source, out = export_dir
    capsys.readouterr()
    target = f"clickhouse:///{tmp_path / 'ch'}"
    code, text, _ = _out(capsys, "store", "import", str(out), "--db", target)
    assert code == 0 and text.startswith("imported 6 runs (") and "counts and checksums match" in text
    assert table_sums(target) == table_sums(source)  # ids kept as exported
    for argv in (["runs", "--format", "json"],
                 ["gate", "--baseline", "run04", "--candidate", "run05", "--format", "json"]):
        assert _out(capsys, *argv, "--db", target) == _out(capsys, *argv, "--db", source)
    assert _out(capsys, "store", "export", str(tmp_path / "again"), "--db", target)[0] == 0
    back = f"sqlite:///{tmp_path / 'back.db'}"
    code, text, _ = _out(capsys, "store", "import", str(tmp_path / "again"), "--db", back)
    assert code == 0 and "counts and checksums match" in text
    assert table_sums(back) == table_sums(source)


def test_export_refuses_a_non_empty_folder(export_dir: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    source, out = export_dir
    capsys.readouterr()
    code, _, err = _out(capsys, "store", "export", str(out), "--db", source)
    assert code == 2 and err.count("\n") == 1 and "folder is not empty; pass a new or empty folder" in err


def test_store_without_an_action_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = _out(capsys, "store")
    assert code == 2 and "export" in text and "import" in text


def _json_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:  # type: ignore[type-arg]
    def apply(d: Path) -> None:
        doc = json.loads((d / "manifest.json").read_text())
        edit(doc)
        (d / "manifest.json").write_text(json.dumps(doc))
    return apply


def _table(doc: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(t for t in doc["tables"] if t["name"] == name)


def _parquet_edit(name: str, edit: Callable[[pa.Table], pa.Table]) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        path = d / f"{name}.parquet"
        pq.write_table(edit(pq.read_table(path)), path)
    return apply


def _set(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(column), column, values)


def _truncate(d: Path) -> None:
    data = (d / "samples.parquet").read_bytes()
    (d / "samples.parquet").write_bytes(data[: len(data) // 2])


BAD = {
    "manifest missing": (lambda d: (d / "manifest.json").unlink(), "manifest.json: missing"),
    "manifest not JSON": (lambda d: (d / "manifest.json").write_text('{"format": '), "manifest.json:1:12: not JSON"),
    "manifest not an export": (_json_edit(lambda doc: doc.update(format="x")), "manifest.json: format is 'x'"),
    "manifest rows field": (_json_edit(lambda doc: _table(doc, "points").update(rows="9")),
                            "manifest.json: tables[4].rows: '9' is not an integer"),
    "row count disagrees": (_json_edit(lambda doc: _table(doc, "runs").update(rows=7)),
                            "runs.parquet: 6 rows, manifest.json says 7"),
    "checksum disagrees": (_json_edit(lambda doc: _table(doc, "kernels").update(checksum="sha256:" + "0" * 64)),
                           "kernels.parquet: its rows do not match the checksum in manifest.json"),
    "a value altered": (_parquet_edit("metrics", lambda t: _set(t, "value", pa.compute.multiply(t["value"], 2.0))),
                        "metrics.parquet: its rows do not match the checksum"),
    "truncated file": (_truncate, "samples.parquet: not a readable Parquet file"),
    "table file missing": (lambda d: (d / "kernels.parquet").unlink(), "kernels.parquet: missing"),
    "table missing from manifest": (
        _json_edit(lambda doc: doc.update(tables=[t for t in doc["tables"] if t["name"] != "kernels"])),
        "manifest.json: table kernels missing"),
    "unknown column in file": (_parquet_edit("points", lambda t: t.append_column("extra", pa.array([1] * len(t)))),
                               "points.parquet: unknown column 'extra'"),
    "unknown column in manifest": (
        _json_edit(lambda doc: _table(doc, "points")["columns"].append({"name": "x", "type": "int", "nullable": True})),
        "manifest.json: table points: unknown column 'x'"),
    "NULL where forbidden": (_parquet_edit("runs", lambda t: _set(t, "gpu", pa.nulls(len(t), pa.string()))),
                             "runs.parquet: column gpu holds NULL"),
    "wrong column type": (_parquet_edit("samples", lambda t: _set(t, "value", t["value"].cast(pa.string()))),
                          "samples.parquet: column value holds string, not double"),
    "older schema": (_json_edit(lambda doc: doc.update(schema_version=1)),
                     "manifest.json: exported at store schema version 1, this perfkit imports 2"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_damaged_export_is_one_line_and_leaves_the_target_alone(
        case: str, export_dir: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _source, out = export_dir
    damage, message = BAD[case]
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    damage(bad)
    target = tmp_path / "target.db"
    fill_store(f"sqlite:///{target}", n_runs=1, prefix="own")
    before = target.read_bytes()
    capsys.readouterr()
    code, text, err = _out(capsys, "store", "import", str(bad), "--db", str(target))
    assert code == 2 and text == "" and err.count("\n") == 1, err
    assert message in err and str(bad) in err
    assert target.read_bytes() == before
    code, _, err = _out(capsys, "store", "import", str(bad), "--db", str(tmp_path / "new.db"))
    assert code == 2 and message in err and not (tmp_path / "new.db").exists()


@pytest.mark.slow
def test_compact_merges_a_lakes_runs_and_refuses_other_stores(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("duckdb_engine", reason="the Parquet lake needs pip install 'perfkit[duckdb]'")
    url = f"lake:///{tmp_path / 'lake'}"
    fill_store(url, n_runs=3)
    before = table_sums(url)
    assert main(["store", "compact", "--db", url]) == 0
    assert "compacted 1 partitions (3 folders merged, 0 replaced folders removed)" in capsys.readouterr().out
    assert table_sums(url) == before
    assert main(["store", "compact", "--db", str(tmp_path / "perfkit.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a Parquet lake" in err[0]
    with pytest.raises(SystemExit) as exit_info:
        main(["store", "compact", "--db", url, "--grace-s", "-1"])
    assert exit_info.value.code == 2 and "--grace-s: -1 is not a finite number >= 0" in capsys.readouterr().err
